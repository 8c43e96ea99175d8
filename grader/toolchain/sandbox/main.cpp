/* The sandbox executable: the compilers' sandbox, and the probe of which layers of it work
   on this machine (grader/toolchain/sandbox/__init__.py runs both).

     sandbox probe DIR [UID GID]              applies every layer it can, prints what worked
     sandbox exec DIR ... -- PROGRAM ARG...   runs a compiler sandboxed (exec_sandboxed)

   The CPU backend's runner applies the same layers (sandbox.cpp) to itself. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "sandbox.h"
#include "sandbox_contract.h"

using namespace rt;
using Clock = std::chrono::steady_clock;

/* Applies every layer it can, with nothing required (as UID:GID when started as root
   and given one), checks three of them from the inside, and prints the sandbox record on
   stdout. */
static int probe(const char* dir, long uid, long gid) {
    Policy p;
    p.scratch = dir;
    p.read_paths = {"/usr", "/lib", "/lib64"};
    p.require_fs = false;
    p.require_net = false;
    p.uid = uid;
    p.gid = gid;
    SandboxState state;
    sandbox_before_threads(p, &state);
    sandbox_after_threads(p, &state);
    int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
    bool files_blocked = fd < 0;
    if (fd >= 0) close(fd);
    int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    bool sockets_blocked = sock < 0;
    if (sock >= 0) close(sock);
    int shm = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
    bool ipc_blocked = shm < 0;
    if (shm >= 0) shmctl(shm, IPC_RMID, nullptr);
    if (state.landlock && !files_blocked) state.error += "landlock did not block a read; ";
    if (state.seccomp && !sockets_blocked) state.error += "seccomp did not block a socket; ";
    if (state.seccomp && !ipc_blocked) state.error += "seccomp did not block shmget; ";
    Line l;
    l.str("sandbox").kv("ipc_blocked", ipc_blocked ? 1 : 0);
    l.kv("files_blocked", files_blocked ? 1 : 0).kv("sockets_blocked", sockets_blocked ? 1 : 0);
    sandbox_fields(state, l);
    report_use_fd(1);
    l.write();
    return 0;
}

/* sandbox exec DIR [--read PATH]... [--timeout S] [--memory B] [--cpu S] [--fsize B]
                [--require-files] [--status FD] -- PROGRAM ARG...
   Runs a compiler on a student's file. With the source's own #include lines (or .incbin)
   a compiler could read any file of the user (the grader's /proc/PID/environ, a hidden
   case, the secret) and quote it in its messages, so it runs:
   - with landlock: read and execute only the --read paths, use DIR (its own copy of the
     source, its temporaries: TMPDIR is DIR); it runs in the sandbox's working folder;
   - with resource limits (address space, CPU seconds, file size) and no capabilities;
   - with compiler_seccomp_apply: no sockets, no leaving its process group;
   - in a process group of its own, killed whole when the program ends, at the timeout,
     or when the sandbox is stopped; a watcher in the group kills it if the sandbox dies;
   - with an environment of PATH, LC_ALL=C, HOME and TMPDIR only (never the grader's).
   The sandbox exits with the program's status (128 + signal when a signal ended it), or
   one of its own (EXEC_*: at the timeout, when --require-files and landlock could not be
   applied). Every option but --read comes once at most, and the limits must: the grader
   gives them all. With --status FD it writes one line there: how the program ended and
   what it used. */
struct ExecJob {
    Policy policy;
    double timeout = 0;
    bool require_files = false;
    int status_fd = -1;
    char** argv = nullptr;
};

static bool parse_exec(int argc, char** argv, ExecJob* job) {
    Policy& p = job->policy;
    p.scratch = argv[2];
    p.scratch_create = true;
    p.limit_processes = false;
    p.want_netns = false;
    p.require_fs = false;
    int seen[OPTION_COUNT] = {};
    int i = 3;
    for (; i < argc && strcmp(argv[i], "--") != 0; ++i) {
        int option = key_of(OPTION_RULES, OPTION_COUNT, argv[i]);
        if (option < 0) return false;
        ++seen[option];
        if (option == OPTION_REQUIRE_FILES) {
            job->require_files = true;
            continue;
        }
        if (i + 1 >= argc) return false;
        const char* value = argv[++i];
        switch ((ExecOption)option) {
            case OPTION_READ: p.read_paths.push_back(value); break;
            case OPTION_TIMEOUT: job->timeout = strtod(value, nullptr); break;
            case OPTION_CPU: p.cpu = strtoull(value, nullptr, 10); break;
            case OPTION_MEMORY: p.memory = strtoull(value, nullptr, 10); break;
            case OPTION_FSIZE: p.fsize = strtoull(value, nullptr, 10); break;
            case OPTION_REQUIRE_FILES: break;
            case OPTION_STATUS: job->status_fd = atoi(value); break;
        }
    }
    if (key_miscounted(OPTION_RULES, OPTION_COUNT, seen) >= 0 || i + 1 >= argc) return false;
    job->argv = argv + i + 1;
    return true;
}

/* The watcher: first in the group, it holds the read end of a pipe whose only writer
   is the sandbox. When the sandbox is gone, however it went, the read sees the end of
   the pipe and the watcher kills the whole group, itself included. */
[[noreturn]] static void watch(int fd, const sigset_t& mask) {
    sigprocmask(SIG_SETMASK, &mask, nullptr);
    char c;
    while (read(fd, &c, 1) != 0) {
        if (errno != EINTR) break;
    }
    kill(0, SIGKILL);
    _exit(0);
}

[[noreturn]] static void exec_program(const ExecJob& job, const sigset_t& mask) {
    SandboxState state;
    if (!compiler_seccomp_apply(&state)) {
        fprintf(stderr, "runner: %s\n", state.error.c_str());
        _exit(EXEC_NO_FILES);
    }
    sigprocmask(SIG_SETMASK, &mask, nullptr);
    const std::string& dir = job.policy.scratch;
    const char* path = getenv("PATH");
    std::string vars[] = {std::string("PATH=") + (path ? path : "/usr/local/bin:/usr/bin:/bin"),
                          "LC_ALL=C", "HOME=" + dir, "TMPDIR=" + dir};
    char* env[] = {&vars[0][0], &vars[1][0], &vars[2][0], &vars[3][0], nullptr};
    execve(job.argv[0], job.argv, env);
    fprintf(stderr, "runner: cannot run %s: %s\n", job.argv[0], strerror(errno));
    _exit(EXEC_NOT_RUN);
}

static void exec_status(const ExecJob& job, int status, bool timed_out, const SandboxState& s) {
    if (job.status_fd < 0) return;
    struct rusage use;
    getrusage(RUSAGE_CHILDREN, &use);
    long long cpu_ms = (use.ru_utime.tv_sec + use.ru_stime.tv_sec) * 1000LL +
                       (use.ru_utime.tv_usec + use.ru_stime.tv_usec) / 1000;
    Line l;
    l.str("exec").kv("code", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    l.kv("signal", WIFSIGNALED(status) ? WTERMSIG(status) : 0).kv("timeout", timed_out ? 1 : 0);
    l.kv("landlock", s.landlock ? 1 : 0).kv("peak_kb", (long long)use.ru_maxrss);
    l.kv("cpu_ms", cpu_ms).kvbytes("error", s.error.c_str());
    report_use_fd(job.status_fd);
    l.write();
}

static int exec_sandboxed(int argc, char** argv) {
    ExecJob job;
    if (!parse_exec(argc, argv, &job)) {
        fprintf(stderr, "usage: sandbox exec DIR [--read PATH]... [OPTION]... -- PROGRAM ARG...\n");
        return EXEC_USAGE;
    }
    if (job.status_fd >= 0) fcntl(job.status_fd, F_SETFD, FD_CLOEXEC);
    /* Landlock first, so that the watcher and the program share the sandbox's domain:
       with ABI 6 a domain may signal only itself and the domains inside it. */
    SandboxState state;
    sandbox_before_threads(job.policy, &state);
    rlimits_only(job.policy, &state);
    if (job.require_files && !state.landlock) {
        exec_status(job, EXEC_NO_FILES << 8, false, state);
        return EXEC_NO_FILES;
    }
    sigset_t stops, old;
    sigemptyset(&stops);
    for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&stops, sig);
    sigprocmask(SIG_BLOCK, &stops, &old);
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) return EXEC_USAGE;
    pid_t watcher = fork();
    if (watcher < 0) return EXEC_USAGE;
    if (watcher == 0) {
        setpgid(0, 0);
        close(pipefd[1]);
        if (job.status_fd >= 0) close(job.status_fd);
        for (int fd = 0; fd < 3; ++fd) {
            if (fd != pipefd[0]) close(fd); /* never what holds the output open */
        }
        watch(pipefd[0], old);
    }
    close(pipefd[0]);
    setpgid(watcher, watcher);
    pid_t child = fork();
    if (child == 0) {
        setpgid(0, watcher);
        exec_program(job, old);
    }
    if (child > 0) setpgid(child, watcher);
    int status = EXEC_NOT_RUN << 8;
    bool timed_out = false, reaped = false;
    auto deadline = Clock::now() + std::chrono::duration<double>(job.timeout);
    while (child > 0 && !reaped) {
        reaped = waitpid(child, &status, WNOHANG) == child;
        double left = std::chrono::duration<double>(deadline - Clock::now()).count();
        if (reaped || left <= 0) {
            timed_out = !reaped;
            break;
        }
        struct timespec ts = {(time_t)left, (long)((left - (time_t)left) * 1e9)};
        int sig = sigtimedwait(&stops, nullptr, &ts);
        if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT) {
            kill(-watcher, SIGKILL);
            _exit(128 + sig); /* the watcher, if still there, sees the pipe close */
        }
    }
    close(pipefd[1]);
    kill(-watcher, SIGKILL); /* what the program left running, and the watcher */
    if (child > 0 && !reaped) waitpid(child, &status, 0);
    waitpid(watcher, nullptr, 0);
    exec_status(job, status, timed_out, state);
    if (timed_out) return EXEC_TIMED_OUT;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char** argv) {
    if (argc == 3 && strcmp(argv[1], "probe") == 0) _exit(probe(argv[2], -1, -1));
    if (argc == 5 && strcmp(argv[1], "probe") == 0) {
        _exit(probe(argv[2], strtol(argv[3], nullptr, 10), strtol(argv[4], nullptr, 10)));
    }
    if (argc >= 5 && strcmp(argv[1], "exec") == 0) return exec_sandboxed(argc, argv);
    fprintf(stderr,
            "usage: sandbox probe DIR [UID GID], or sandbox exec DIR [--read PATH]... -- CMD\n");
    return EXEC_USAGE;
}
