/* The sandbox's layers (sandbox.cpp), which the CPU backend's runner applies to itself
   before it loads a submission, and `sandbox exec` (main.cpp) around every compiler. */
#ifndef GRADER_SANDBOX_H
#define GRADER_SANDBOX_H

#include <string>
#include <vector>

#include "record.h"

namespace rt {

struct Policy {
    std::vector<std::string> read_paths;  /* read (and map) only */
    std::string scratch;                  /* read and write */
    bool scratch_create = false;          /* may also create and remove files there */
    bool limit_processes = true;          /* RLIMIT_NPROC 0 (not for a compiler) */
    bool want_netns = true;
    bool require_fs = true;
    bool require_net = true;
    unsigned long long memory = 0;  /* RLIMIT_AS bytes, 0 = unlimited */
    unsigned long long cpu = 0;     /* RLIMIT_CPU seconds */
    unsigned long long fsize = 0;   /* RLIMIT_FSIZE bytes */
    /* RLIMIT_AS as what the process holds when the limit is set plus this many bytes
       (0: `memory` alone applies), so that the student's share does not depend on how
       many threads, arenas and libraries the runner needed on this machine. */
    unsigned long long memory_headroom = 0;
    long uid = -1, gid = -1; /* when started as root: run as this user (-1: stay) */
};
struct SandboxState {
    int landlock_abi = 0;
    bool landlock = false;
    bool seccomp = false;
    bool userns = false;
    bool netns = false;
    bool caps_dropped = false;
    bool ipcns = false;
    bool scratch_refused = false; /* landlock could not name the scratch folder */
    long uid = -1; /* the user it switched to, -1 if none */
    bool rlimits = false;
    std::string error;
};
/* Before any thread exists: no new privileges, namespaces, landlock. */
bool sandbox_before_threads(const Policy& p, SandboxState* s);
/* After the pool exists: resource limits, then the seccomp filter for every thread. */
bool sandbox_after_threads(const Policy& p, SandboxState* s);
/* The resource limits alone (for `sandbox exec`). */
void rlimits_only(const Policy& p, SandboxState* s);
/* The layers' fields of a "sandbox" record, the error last (a long one is cut at the
   end of the line, the other fields are not). */
void sandbox_fields(const SandboxState& s, Line& l);
/* A worker's "sandbox" record. */
void sandbox_report(const SandboxState& s);
/* The seccomp filter for a compiler under `sandbox exec` (processes allowed). */
bool compiler_seccomp_apply(SandboxState* s);

}  // namespace rt

#endif
