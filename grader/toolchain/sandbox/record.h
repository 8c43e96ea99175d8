/* Records: what the runner and the sandbox tell the grader, one per line, "name
   key=value ...", which grader/toolchain/sandbox/__init__.py's parse_fields reads. */
#ifndef GRADER_RECORD_H
#define GRADER_RECORD_H

#include <stddef.h>

namespace rt {

/* Where records go: a file descriptor (-1, or one that is not open: nowhere). */
void report_use_fd(int fd);
/* Async-signal-safe line builder: no allocation, no stdio. */
struct Line {
    char buf[1024];
    size_t len = 0;
    Line& str(const char* s);
    Line& num(long long v);
    Line& hex(unsigned long long v);
    Line& kv(const char* key, long long v);
    Line& kv(const char* key, const char* v);
    Line& kvhex(const char* key, unsigned long long v);
    Line& kv3(const char* key, unsigned x, unsigned y, unsigned z);
    Line& kvbytes(const char* key, const char* s); /* hex-encoded text */
    void write();
};
/* The runner's own failure: an "error" record (what, and the detail hex-encoded), then
   _exit(code). */
[[noreturn]] void fail(const char* what, const char* detail, int code);

}  // namespace rt

#endif
