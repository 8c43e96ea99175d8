/* The worker's sandbox, applied before the student's module is loaded (its global
   constructors run at dlopen). What each layer does and needs is described in
   grader/backends/cpu/sandbox.py; in order:

   1. no_new_privs, so that nothing can gain privileges by exec or setuid;
   2. a new user namespace with a new network namespace (no interfaces but a down
      loopback), where the kernel allows unprivileged user namespaces; as root, a network
      namespace alone when the user namespace is refused; then every capability dropped;
   3. landlock: write only the files in the scratch folder, read only them and the
      paths the job names (the module); with ABI 4 no TCP bind or connect; with ABI 6 no
      abstract unix sockets or signals outside the sandbox;
   4. resource limits: address space, CPU seconds, file size, open files, processes,
      no core files;
   5. seccomp, on every thread: no sockets at all (so no unix sockets either), no new
      processes (threads only), no exec, no ptrace or access to other processes' memory,
      no signals to other processes, no namespaces, mounts, BPF, io_uring, keyrings,
      kernel modules, no raising resource limits, no TIOCSTI. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt.h"

#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef SECCOMP_FILTER_FLAG_TSYNC
#define SECCOMP_FILTER_FLAG_TSYNC 1
#endif
#ifndef CLONE_NEWUSER
#define CLONE_NEWUSER 0x10000000
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

static void allow_path(int ruleset, const std::string& path, unsigned long long rights,
                       unsigned long long handled) {
    int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) return; /* a path this system does not have */
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) rights &= FILE_ONLY;
    LlPathRule rule;
    rule.allowed = rights & handled;
    rule.parent_fd = fd;
    syscall(SYS_LL_ADD_RULE, ruleset, 1 /* path beneath */, &rule, 0);
    close(fd);
}

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
    for (const std::string& path : p.file_paths) {
        allow_path((int)ruleset, path, LL_READ_FILE | LL_EXECUTE, attr.fs);
    }
    allow_path((int)ruleset, "/dev/null", LL_READ_FILE | LL_WRITE_FILE, attr.fs);
    /* The scratch folder: read, and write the files the grader created there; creating,
       removing or linking files is not allowed, so the output files bound what the
       worker can write. */
    if (!p.scratch.empty()) {
        unsigned long long rights = p.scratch_create
                                        ? attr.fs
                                        : LL_READ_FILE | LL_READ_DIR | LL_WRITE_FILE | LL_TRUNCATE;
        allow_path((int)ruleset, p.scratch, rights, attr.fs);
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

static void namespaces_apply(SandboxState* s) {
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) {
        s->userns = true;
        s->netns = true;
        /* Map ourselves, so that files we create in the scratch folder have an owner. */
        char map[64];
        write_file("/proc/self/setgroups", "deny");
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
        write_file("/proc/self/uid_map", map);
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
        write_file("/proc/self/gid_map", map);
    } else if (unshare(CLONE_NEWNET) == 0) {
        s->netns = true;
    }
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

static bool seccomp_apply(SandboxState* s) {
#if defined(__x86_64__)
    const unsigned arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    const unsigned arch = AUDIT_ARCH_AARCH64;
#else
    s->error += "seccomp filter not written for this architecture; ";
    return false;
#endif
    Filter f;
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
    const long denied[] = {
        SYS_connect, SYS_bind, SYS_listen, SYS_accept, SYS_accept4, SYS_execve, SYS_execveat,
        SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_kcmp, SYS_mount,
        SYS_umount2, SYS_pivot_root, SYS_chroot, SYS_unshare, SYS_setns, SYS_bpf,
        SYS_perf_event_open, SYS_keyctl, SYS_add_key, SYS_request_key, SYS_userfaultfd,
        SYS_init_module, SYS_finit_module, SYS_delete_module, SYS_kexec_load, SYS_reboot,
        SYS_swapon, SYS_swapoff, SYS_acct, SYS_quotactl, SYS_open_by_handle_at,
        SYS_name_to_handle_at, SYS_setrlimit, SYS_tkill, SYS_mknodat,
#ifdef SYS_fork
        SYS_fork,
#endif
#ifdef SYS_vfork
        SYS_vfork,
#endif
#ifdef SYS_mknod
        SYS_mknod,
#endif
#ifdef SYS_kexec_file_load
        SYS_kexec_file_load,
#endif
#ifdef SYS_pidfd_open
        SYS_pidfd_open,
#endif
#ifdef SYS_pidfd_getfd
        SYS_pidfd_getfd,
#endif
#ifdef SYS_pidfd_send_signal
        SYS_pidfd_send_signal,
#endif
#ifdef SYS_io_uring_setup
        SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register,
#endif
#ifdef SYS_fsopen
        SYS_fsopen, SYS_fsmount, SYS_move_mount, SYS_open_tree,
#endif
    };
    for (long nr : denied) f.deny(nr, EPERM);
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
    /* ioctl: no TIOCSTI (typing into someone's terminal) */
    f.jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 4);
    f.stmt(BPF_LD | BPF_W | BPF_ABS, Filter::arg_lo(1));
    f.jump(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 0, 1);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

    struct sock_fprog prog;
    prog.len = (unsigned short)f.code.size();
    prog.filter = f.code.data();
    long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
    if (rc != 0) {
        s->error += "seccomp filter refused; ";
        return false;
    }
    return true;
}

/* -- the two steps ----------------------------------------------------------------------- */
bool sandbox_before_threads(const Policy& p, SandboxState* s) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) s->error += "no_new_privs refused; ";
    if (p.want_netns) namespaces_apply(s);
    capabilities_drop(s);
    if (p.want_landlock) s->landlock = landlock_apply(p, s);
    if (p.require_fs && !s->landlock) return false;
    return true;
}

bool sandbox_after_threads(const Policy& p, SandboxState* s) {
    rlimits_only(p, s);
    if (p.want_seccomp) s->seccomp = seccomp_apply(s);
    if (p.require_net && !s->seccomp && !s->netns) return false;
    return true;
}

void sandbox_report(const SandboxState& s) {
    Line l;
    l.str("sandbox").kv("landlock_abi", s.landlock_abi).kv("landlock", s.landlock ? 1 : 0);
    l.kv("seccomp", s.seccomp ? 1 : 0).kv("userns", s.userns ? 1 : 0);
    l.kv("netns", s.netns ? 1 : 0).kv("caps_dropped", s.caps_dropped ? 1 : 0);
    l.kv("rlimits", s.rlimits ? 1 : 0).kvbytes("error", s.error.c_str());
    l.write();
}

/* -- the compilers' filter ------------------------------------------------------------- */
/* For `runner exec`: a compiler runs other programs (nvcc runs cicc, ptxas and the host
   compiler), so fork and exec stay allowed. What goes: sockets of every family, leaving
   the process group the runner made (so the group can be killed whole), new namespaces,
   ptrace and reading other processes' memory, mounts, BPF, io_uring, keyrings, kernel
   modules and TIOCSTI. */
bool compiler_seccomp_apply(SandboxState* s) {
#if defined(__x86_64__)
    const unsigned arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
    const unsigned arch = AUDIT_ARCH_AARCH64;
#else
    s->error += "seccomp filter not written for this architecture; ";
    return false;
#endif
    Filter f;
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
    const long denied[] = {
        SYS_connect, SYS_bind, SYS_listen, SYS_accept, SYS_accept4, SYS_setsid, SYS_setpgid,
        SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_kcmp, SYS_mount,
        SYS_umount2, SYS_pivot_root, SYS_chroot, SYS_unshare, SYS_setns, SYS_bpf,
        SYS_perf_event_open, SYS_keyctl, SYS_add_key, SYS_request_key, SYS_userfaultfd,
        SYS_init_module, SYS_finit_module, SYS_delete_module, SYS_kexec_load, SYS_reboot,
        SYS_swapon, SYS_swapoff, SYS_acct, SYS_quotactl, SYS_open_by_handle_at,
        SYS_name_to_handle_at, SYS_mknodat,
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
    for (long nr : denied) f.deny(nr, EPERM);
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
    /* ioctl: no TIOCSTI (typing into someone's terminal) */
    f.jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 3);
    f.stmt(BPF_LD | BPF_W | BPF_ABS, Filter::arg_lo(1));
    f.jump(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 0, 1);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    f.stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

    struct sock_fprog prog;
    prog.len = (unsigned short)f.code.size();
    prog.filter = f.code.data();
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
        s->error += "seccomp filter refused; ";
        return false;
    }
    return true;
}

}  // namespace rt
