/* The worker's sandbox, applied before the student's module is loaded (its global
   constructors run at dlopen). What each layer does and needs is described in
   grader/toolchain/sandbox/__init__.py; in order:

   1. no_new_privs, so that nothing can gain privileges by exec or setuid;
   2. new network and IPC namespaces (no interfaces but a down loopback; System V IPC
      objects of its own): as root directly, then the switch to an unprivileged user, so
      that process limits bind; otherwise inside a new user namespace, where the kernel
      allows unprivileged ones; then every capability dropped;
   3. landlock: write only the files in the scratch folder, read only them (the module
      is copied in) and the policy's read paths (a compiler's toolchain); with ABI 4 no
      TCP bind or connect; with ABI 6 no abstract unix sockets or signals outside it;
   4. resource limits: address space, CPU seconds, file size, open files, processes,
      no core files;
   5. seccomp, on every thread: no sockets at all (so no unix sockets either), no new
      processes (threads only), no exec, no ptrace or access to other processes' memory,
      no signals to other processes, no namespaces, mounts, BPF, io_uring, keyrings,
      kernel modules, no raising resource limits, no TIOCSTI; and nothing another
      submission's worker could see: no System V or POSIX IPC, no inotify, dnotify or
      fanotify, no file locks, no changing a file's mode, owner, times or attributes, no
      reading or setting another process's scheduling; and no new handler for the
      signals that report faults. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox.h"

#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef SECCOMP_FILTER_FLAG_TSYNC
#define SECCOMP_FILTER_FLAG_TSYNC 1
#endif
#ifndef CLONE_NEWUSER
#define CLONE_NEWUSER 0x10000000
#endif
#ifndef CLONE_NEWIPC
#define CLONE_NEWIPC 0x08000000
#endif

namespace rt {

/* -- landlock (numbers from the kernel's documented user API) -------------------------- */
enum : unsigned long long {
    LL_EXECUTE = 1ull << 0,
    LL_WRITE_FILE = 1ull << 1,
    LL_READ_FILE = 1ull << 2,
    LL_READ_DIR = 1ull << 3,
    LL_REFER = 1ull << 13,
    LL_TRUNCATE = 1ull << 14,
    LL_IOCTL_DEV = 1ull << 15,
    LL_NET_BIND_TCP = 1ull << 0,
    LL_NET_CONNECT_TCP = 1ull << 1,
    LL_SCOPE_ABSTRACT_UNIX = 1ull << 0,
    LL_SCOPE_SIGNAL = 1ull << 1,
};
enum { SYS_LL_CREATE = 444, SYS_LL_ADD_RULE = 445, SYS_LL_RESTRICT = 446 };

struct LlRuleset {
    unsigned long long fs, net, scoped;
};
struct __attribute__((packed)) LlPathRule {
    unsigned long long allowed;
    int parent_fd;
};

static unsigned long long fs_rights(int abi) {
    unsigned long long r = (1ull << 13) - 1;
    if (abi >= 2) r |= LL_REFER;
    if (abi >= 3) r |= LL_TRUNCATE;
    if (abi >= 5) r |= LL_IOCTL_DEV;
    return r;
}

static const unsigned long long FILE_ONLY =
    LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_TRUNCATE | LL_IOCTL_DEV;

static bool allow_fd(int ruleset, int fd, unsigned long long rights, unsigned long long handled) {
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) rights &= FILE_ONLY;
    LlPathRule rule;
    rule.allowed = rights & handled;
    rule.parent_fd = fd;
    return syscall(SYS_LL_ADD_RULE, ruleset, 1 /* path beneath */, &rule, 0) == 0;
}

static bool allow_path(int ruleset, const std::string& path, unsigned long long rights,
                       unsigned long long handled) {
    int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) return false; /* a path this system does not have */
    bool ok = allow_fd(ruleset, fd, rights, handled);
    close(fd);
    return ok;
}

/* The scratch folder, opened before any switch of user: a worker that runs as uid 65534
   keeps its way into a folder below one that only root may enter (a TMPDIR of root's). */
static int g_scratch_fd = -1;

static bool landlock_apply(const Policy& p, SandboxState* s) {
    long abi = syscall(SYS_LL_CREATE, nullptr, 0, 1 /* version */);
    if (abi < 1) {
        s->error += "landlock is not available in this kernel; ";
        return false;
    }
    s->landlock_abi = (int)abi;
    LlRuleset attr;
    attr.fs = fs_rights((int)abi);
    attr.net = abi >= 4 ? (LL_NET_BIND_TCP | LL_NET_CONNECT_TCP) : 0;
    attr.scoped = abi >= 6 ? (LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL) : 0;
    size_t size = abi >= 6 ? 24 : (abi >= 4 ? 16 : 8);
    long ruleset = syscall(SYS_LL_CREATE, &attr, size, 0);
    if (ruleset < 0) {
        s->error += "landlock_create_ruleset failed; ";
        return false;
    }
    const unsigned long long read = LL_READ_FILE | LL_READ_DIR | LL_EXECUTE;
    for (const std::string& path : p.read_paths) allow_path((int)ruleset, path, read, attr.fs);
    allow_path((int)ruleset, "/dev/null", LL_READ_FILE | LL_WRITE_FILE, attr.fs);
    /* The scratch folder: read, and write the files the grader created there; creating,
       removing or linking files is not allowed, so the output files bound what the
       worker can write. */
    if (!p.scratch.empty()) {
        unsigned long long rights = p.scratch_create
                                        ? attr.fs
                                        : LL_READ_FILE | LL_READ_DIR | LL_WRITE_FILE | LL_TRUNCATE;
        if (g_scratch_fd < 0 || !allow_fd((int)ruleset, g_scratch_fd, rights, attr.fs)) {
            s->error += "the scratch folder " + p.scratch + " cannot be opened; ";
            s->scratch_refused = true;
        }
    }
    bool ok = syscall(SYS_LL_RESTRICT, ruleset, 0) == 0;
    close((int)ruleset);
    if (!ok) s->error += "landlock_restrict_self failed; ";
    return ok;
}

/* -- namespaces and capabilities ------------------------------------------------------- */
static bool write_file(const char* path, const char* text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    close(fd);
    return ok;
}

/* Network and IPC namespaces straight away where this process may make them (root);
   otherwise, after any switch of user, inside a new user namespace. */
static void namespaces_apply(SandboxState* s, bool privileged) {
    if (privileged) {
        if (unshare(CLONE_NEWNET | CLONE_NEWIPC) == 0) {
            s->netns = s->ipcns = true;
        } else if (unshare(CLONE_NEWNET) == 0) {
            s->netns = true;
        }
        return;
    }
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC) == 0) {
        s->userns = s->netns = s->ipcns = true;
        /* Map ourselves, so that files we create in the scratch folder have an owner. */
        char map[64];
        write_file("/proc/self/setgroups", "deny");
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
        write_file("/proc/self/uid_map", map);
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
        write_file("/proc/self/gid_map", map);
    }
}

/* Root is exempt from RLIMIT_NPROC, so a worker started as root becomes p.uid. Its
   thread limit is lifted first: the pool is made after the switch, and other processes
   of that user must not count against it. */
static bool user_switch(const Policy& p, SandboxState* s) {
    struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_NPROC, &unlimited);
    if (setgroups(0, nullptr) != 0 || setresgid((gid_t)p.gid, (gid_t)p.gid, (gid_t)p.gid) != 0 ||
        setresuid((uid_t)p.uid, (uid_t)p.uid, (uid_t)p.uid) != 0) {
        s->error += "could not switch from root to uid " + std::to_string(p.uid) + " (" +
                    strerror(errno) + "); ";
        return false;
    }
    s->uid = p.uid;
    return true;
}

struct CapHeader {
    unsigned int version;
    int pid;
};
struct CapData {
    unsigned int effective, permitted, inheritable;
};

static void capabilities_drop(SandboxState* s) {
    for (int cap = 0; cap < 64; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
    CapHeader h = {0x20080522 /* version 3 */, 0};
    CapData d[2];
    memset(d, 0, sizeof(d));
    s->caps_dropped = syscall(SYS_capset, &h, d) == 0;
}

/* -- resource limits ------------------------------------------------------------------- */
static int g_statm = -1; /* /proc/self/statm, opened before landlock closes /proc */

/* Bytes of address space this process holds now, or 0 if /proc cannot say. */
static unsigned long long address_space() {
    char buf[128];
    ssize_t n = g_statm >= 0 ? pread(g_statm, buf, sizeof(buf) - 1, 0) : -1;
    if (n <= 0) return 0;
    buf[n] = 0;
    return strtoull(buf, nullptr, 10) * (unsigned long long)sysconf(_SC_PAGESIZE);
}

static void limit(int resource, unsigned long long soft, unsigned long long hard) {
    struct rlimit r;
    r.rlim_cur = soft;
    r.rlim_max = hard;
    setrlimit(resource, &r);
}

void rlimits_only(const Policy& p, SandboxState* s) {
    limit(RLIMIT_CORE, 0, 0);
    if (p.memory) limit(RLIMIT_AS, p.memory, p.memory);
    if (p.cpu) limit(RLIMIT_CPU, p.cpu, p.cpu + 2);
    if (p.fsize) limit(RLIMIT_FSIZE, p.fsize, p.fsize);
    limit(RLIMIT_NOFILE, 64, 64);
    if (p.limit_processes) limit(RLIMIT_NPROC, 0, 0); /* every thread exists by now */
    s->rlimits = true;
}

/* -- seccomp ------------------------------------------------------------------------------ */
struct Filter {
    std::vector<sock_filter> code;
    void stmt(unsigned short c, unsigned int k) { code.push_back(BPF_STMT(c, k)); }
    void jump(unsigned short c, unsigned int k, unsigned char jt, unsigned char jf) {
        code.push_back(BPF_JUMP(c, k, jt, jf));
    }
    void deny(long nr, int err) {
        jump(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1);
        stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)err);
    }
    static unsigned arg_lo(int i) { return offsetof(struct seccomp_data, args) + 8 * i; }
    static unsigned arg_hi(int i) { return arg_lo(i) + 4; }
};

/* What two workers could pass data through, with no file or socket between them:
   System V and POSIX IPC, notifications on files, locks, a file's metadata (which
   landlock does not guard), another process's scheduling settings. */
static const long UNSHARED[] = {
    SYS_shmget, SYS_shmat, SYS_shmdt, SYS_shmctl, SYS_msgget, SYS_msgsnd, SYS_msgrcv,
    SYS_msgctl, SYS_semget, SYS_semop, SYS_semctl, SYS_semtimedop, SYS_mq_open,
    SYS_mq_unlink, SYS_mq_timedsend, SYS_mq_timedreceive, SYS_mq_notify, SYS_mq_getsetattr,
    SYS_inotify_init1, SYS_inotify_add_watch, SYS_inotify_rm_watch, SYS_fanotify_init,
    SYS_fanotify_mark, SYS_flock, SYS_fchmod, SYS_fchmodat, SYS_fchown, SYS_fchownat,
    SYS_utimensat, SYS_setxattr, SYS_lsetxattr, SYS_fsetxattr, SYS_removexattr,
    SYS_lremovexattr, SYS_fremovexattr, SYS_setpriority, SYS_getpriority, SYS_ioprio_set,
    SYS_ioprio_get, SYS_setpgid, SYS_setsid, SYS_migrate_pages, SYS_move_pages,
    SYS_get_robust_list,
#ifdef SYS_inotify_init
    SYS_inotify_init, SYS_chmod, SYS_chown, SYS_lchown, SYS_utime, SYS_utimes, SYS_futimesat,
#endif
#ifdef SYS_fchmodat2
    SYS_fchmodat2,
#endif
#ifdef SYS_process_madvise
    SYS_process_madvise,
#endif
#ifdef SYS_setxattrat
    SYS_setxattrat, SYS_removexattrat,
#endif
};

/* Calls naming a process: only this one (0 or its own pid). */
static void pid_only(Filter& f) {
    const long calls[] = {SYS_sched_setaffinity, SYS_sched_getaffinity, SYS_sched_setscheduler,
                          SYS_sched_getscheduler, SYS_sched_setparam, SYS_sched_getparam,
                          SYS_sched_setattr, SYS_sched_getattr, SYS_sched_rr_get_interval,
                          SYS_getpgid, SYS_getsid, SYS_prlimit64};
    unsigned pid = (unsigned)getpid();
    for (long nr : calls) {
        f.jump(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 5);
        f.stmt(BPF_LD | BPF_W | BPF_ABS, Filter::arg_lo(0));
        f.jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0);
        f.jump(BPF_JMP | BPF_JEQ | BPF_K, pid, 1, 0);
        f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
        f.stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)); /* go on */
    }
}

/* fcntl, but no locks, leases, directory notifications or signal owners. */
static void fcntl_without_locks(Filter& f) {
    const unsigned cmds[] = {F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE,
                             F_NOTIFY, F_SETOWN, F_SETOWN_EX, F_SETSIG};
    const unsigned n = sizeof(cmds) / sizeof(cmds[0]);
    f.jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_fcntl, 0, (unsigned char)(n + 3));
    f.stmt(BPF_LD | BPF_W | BPF_ABS, Filter::arg_lo(1));
    for (unsigned i = 0; i < n; ++i) f.jump(BPF_JMP | BPF_JEQ | BPF_K, cmds[i], (unsigned char)(n - i), 0);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
}

/* rt_sigaction may read a handler, but not replace the runner's for the signals that
   report a fault or a hang: a kernel that did could hide its own out-of-bounds access. */
static void no_fault_handlers(Filter& f) {
    const unsigned sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGUSR2, SIGSYS};
    const unsigned k = sizeof(sigs) / sizeof(sigs[0]);
    f.jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_rt_sigaction, 0, (unsigned char)(k + 8));
    f.stmt(BPF_LD | BPF_W | BPF_ABS, Filter::arg_lo(0));
    for (unsigned i = 0; i < k; ++i) f.jump(BPF_JMP | BPF_JEQ | BPF_K, sigs[i], (unsigned char)(k - i), 0);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    f.stmt(BPF_LD | BPF_W | BPF_ABS, Filter::arg_lo(1)); /* the new action */
    f.jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2);
    f.stmt(BPF_LD | BPF_W | BPF_ABS, Filter::arg_hi(1));
    f.jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
}

/* System calls neither a worker nor a compiler has a use for: connecting out, other
   processes' memory, namespaces and mounts, BPF, keyrings, kernel modules, io_uring. */
static const long ESCAPES[] = {
    SYS_connect, SYS_bind, SYS_listen, SYS_accept, SYS_accept4, SYS_ptrace,
    SYS_process_vm_readv, SYS_process_vm_writev, SYS_kcmp, SYS_mount, SYS_umount2,
    SYS_pivot_root, SYS_chroot, SYS_unshare, SYS_setns, SYS_bpf, SYS_perf_event_open,
    SYS_keyctl, SYS_add_key, SYS_request_key, SYS_userfaultfd, SYS_init_module,
    SYS_finit_module, SYS_delete_module, SYS_kexec_load, SYS_reboot, SYS_swapon, SYS_swapoff,
    SYS_acct, SYS_quotactl, SYS_open_by_handle_at, SYS_name_to_handle_at, SYS_mknodat,
#ifdef SYS_mknod
    SYS_mknod,
#endif
#ifdef SYS_kexec_file_load
    SYS_kexec_file_load,
#endif
#ifdef SYS_pidfd_getfd
    SYS_pidfd_getfd,
#endif
#ifdef SYS_io_uring_setup
    SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register,
#endif
#ifdef SYS_fsopen
    SYS_fsopen, SYS_fsmount, SYS_move_mount, SYS_open_tree,
#endif
};

/* The start of every filter: this architecture's table only (not x32), no sockets of any
   family, and none of ESCAPES. False when no filter is written for this architecture. */
static bool filter_start(Filter& f, SandboxState* s) {
#if defined(__x86_64__)
    const unsigned arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    const unsigned arch = AUDIT_ARCH_AARCH64;
#else
    s->error += "seccomp filter not written for this architecture; ";
    return false;
#endif
    f.stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    f.jump(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    f.stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
    f.jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1); /* the x32 system call table */
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
#endif
    f.deny(SYS_socket, EACCES);
    f.deny(SYS_socketpair, EACCES);
    for (long nr : ESCAPES) f.deny(nr, EPERM);
    return true;
}

/* The end of every filter: no TIOCSTI (typing into someone's terminal), the rest allowed;
   then the filter is installed. */
static bool filter_finish(Filter& f, SandboxState* s, unsigned flags) {
    f.jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 3);
    f.stmt(BPF_LD | BPF_W | BPF_ABS, Filter::arg_lo(1));
    f.jump(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 0, 1);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog;
    prog.len = (unsigned short)f.code.size();
    prog.filter = f.code.data();
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog) != 0) {
        s->error += "seccomp filter refused; ";
        return false;
    }
    return true;
}

static bool seccomp_apply(SandboxState* s) {
    Filter f;
    if (!filter_start(f, s)) return false;
    const long denied[] = {
        SYS_execve, SYS_execveat, SYS_setrlimit, SYS_tkill,
#ifdef SYS_fork
        SYS_fork,
#endif
#ifdef SYS_vfork
        SYS_vfork,
#endif
#ifdef SYS_pidfd_open
        SYS_pidfd_open,
#endif
#ifdef SYS_pidfd_send_signal
        SYS_pidfd_send_signal,
#endif
    };
    for (long nr : denied) f.deny(nr, EPERM);
    for (long nr : UNSHARED) f.deny(nr, EPERM);
    pid_only(f);
    fcntl_without_locks(f);
    no_fault_handlers(f);
#ifdef SYS_clone3
    f.deny(SYS_clone3, ENOSYS); /* its flags are out of reach; the C library falls back */
#endif
    /* clone: threads only. */
    f.jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4);
    f.stmt(BPF_LD | BPF_W | BPF_ABS, Filter::arg_lo(0));
    f.jump(BPF_JMP | BPF_JSET | BPF_K, 0x00010000u /* CLONE_THREAD */, 0, 1);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    /* signals: only to this process */
    unsigned pid = (unsigned)getpid();
    const long to_pid[] = {SYS_kill, SYS_tgkill, SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo};
    for (long nr : to_pid) {
        f.jump(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 4);
        f.stmt(BPF_LD | BPF_W | BPF_ABS, Filter::arg_lo(0));
        f.jump(BPF_JMP | BPF_JEQ | BPF_K, pid, 0, 1);
        f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    }
    /* prlimit64: reading limits is fine, setting them is not. */
    f.jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_prlimit64, 0, 6);
    f.stmt(BPF_LD | BPF_W | BPF_ABS, Filter::arg_lo(2));
    f.jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3);
    f.stmt(BPF_LD | BPF_W | BPF_ABS, Filter::arg_hi(2));
    f.jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    return filter_finish(f, s, SECCOMP_FILTER_FLAG_TSYNC);
}

/* -- the two steps ----------------------------------------------------------------------- */
bool sandbox_before_threads(const Policy& p, SandboxState* s) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) s->error += "no_new_privs refused; ";
    if (p.memory_headroom) g_statm = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (!p.scratch.empty()) g_scratch_fd = open(p.scratch.c_str(), O_PATH | O_CLOEXEC);
    bool root = geteuid() == 0;
    if (p.want_netns && root) namespaces_apply(s, true);
    bool switched = true; /* the other layers still apply if not, for the probe's record */
    if (p.uid >= 0 && root) {
        for (int cap = 0; cap < 64; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
        switched = user_switch(p, s);
    }
    if (p.want_netns && !s->netns) namespaces_apply(s, false);
    capabilities_drop(s);
    s->landlock = landlock_apply(p, s);
    if (!switched || (p.require_fs && (!s->landlock || s->scratch_refused))) return false;
    return true;
}

bool sandbox_after_threads(const Policy& p, SandboxState* s) {
    if (p.memory_headroom) {
        Policy q = p;
        unsigned long long held = address_space();
        /* without /proc, a generous guess at what 64 threads and their arenas hold */
        q.memory = (held ? held : 8ull << 30) + p.memory_headroom;
        rlimits_only(q, s);
    } else {
        rlimits_only(p, s);
    }
    s->seccomp = seccomp_apply(s);
    if (p.require_net && !s->seccomp && !s->netns) return false;
    return true;
}

void sandbox_fields(const SandboxState& s, Line& l) {
    l.kv("landlock_abi", s.landlock_abi).kv("landlock", s.landlock ? 1 : 0);
    l.kv("seccomp", s.seccomp ? 1 : 0).kv("userns", s.userns ? 1 : 0);
    l.kv("netns", s.netns ? 1 : 0).kv("ipcns", s.ipcns ? 1 : 0).kv("uid", s.uid);
    l.kv("caps_dropped", s.caps_dropped ? 1 : 0).kvbytes("error", s.error.c_str());
}

void sandbox_report(const SandboxState& s) {
    Line l;
    l.str("sandbox").kv("rlimits", s.rlimits ? 1 : 0);
    sandbox_fields(s, l);
    l.write();
}

/* -- the compilers' filter ------------------------------------------------------------- */
/* For `sandbox exec`: a compiler runs other programs (nvcc runs cicc, ptxas and the host
   compiler), so fork and exec stay allowed. What goes: sockets of every family, leaving
   the process group `sandbox exec` made (so the group can be killed whole), new namespaces,
   ptrace and reading other processes' memory, mounts, BPF, io_uring, keyrings, kernel
   modules and TIOCSTI. */
bool compiler_seccomp_apply(SandboxState* s) {
    Filter f;
    if (!filter_start(f, s)) return false;
    f.deny(SYS_setsid, EPERM);
    f.deny(SYS_setpgid, EPERM);
#ifdef SYS_clone3
    f.deny(SYS_clone3, ENOSYS); /* its flags are out of reach; the C library falls back */
#endif
    /* clone: processes and threads, but no new namespaces. */
    const unsigned new_namespaces = 0x7E020000u; /* CLONE_NEWNS, NEWCGROUP ... NEWNET */
    f.jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4);
    f.stmt(BPF_LD | BPF_W | BPF_ABS, Filter::arg_lo(0));
    f.jump(BPF_JMP | BPF_JSET | BPF_K, new_namespaces, 0, 1);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    return filter_finish(f, s, 0);
}

}  // namespace rt
