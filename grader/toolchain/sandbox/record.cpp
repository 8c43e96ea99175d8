/* The records the Python side parses: one per line, "name key=value ...", on the file
   descriptor report_use_fd names (`runner run`'s pipe, `sandbox probe`'s stdout, `sandbox
   exec`'s --status). Records are built without allocation so that the fault handler can
   write them too; each is one write(), so lines from threads never mix. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "record.h"

namespace rt {

static int g_report_fd = -1;

void report_use_fd(int fd) { g_report_fd = fcntl(fd, F_GETFD) >= 0 ? fd : -1; }

Line& Line::str(const char* s) {
    while (*s && len < sizeof(buf) - 2) buf[len++] = *s++;
    return *this;
}

Line& Line::num(long long v) {
    char tmp[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u && n < 23);
    if (v < 0 && len < sizeof(buf) - 2) buf[len++] = '-';
    while (n && len < sizeof(buf) - 2) buf[len++] = tmp[--n];
    return *this;
}

Line& Line::hex(unsigned long long v) {
    static const char digits[] = "0123456789abcdef";
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = digits[v & 15];
        v >>= 4;
    } while (v && n < 19);
    str("0x");
    while (n && len < sizeof(buf) - 2) buf[len++] = tmp[--n];
    return *this;
}

Line& Line::kv(const char* key, long long v) { return str(" ").str(key).str("=").num(v); }

Line& Line::kv(const char* key, const char* v) { return str(" ").str(key).str("=").str(v); }

Line& Line::kvhex(const char* key, unsigned long long v) {
    return str(" ").str(key).str("=").hex(v);
}

Line& Line::kv3(const char* key, unsigned x, unsigned y, unsigned z) {
    str(" ").str(key).str("=").num(x).str(",").num(y).str(",").num(z);
    return *this;
}

Line& Line::kvbytes(const char* key, const char* s) {
    static const char digits[] = "0123456789abcdef";
    str(" ").str(key).str("=");
    if (!*s) str("-");
    while (*s && len < sizeof(buf) - 4) {
        unsigned char c = (unsigned char)*s++;
        buf[len++] = digits[c >> 4];
        buf[len++] = digits[c & 15];
    }
    return *this;
}

void fail(const char* what, const char* detail, int code) {
    Line().str("error").kv("what", what).kvbytes("detail", detail).write();
    _exit(code);
}

void Line::write() {
    buf[len++] = '\n';
    if (g_report_fd >= 0) {
        size_t off = 0;
        while (off < len) {
            ssize_t n = ::write(g_report_fd, buf + off, len - off);
            if (n <= 0) break;
            off += (size_t)n;
        }
    }
    len = 0;
}

}  // namespace rt
