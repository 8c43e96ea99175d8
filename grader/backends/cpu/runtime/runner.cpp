/* The runner: the worker process of the CPU backend.

     runner run DIR FD            runs the job described in DIR/job.txt

   A run reads the job (module, kernel, launch shape, limits, arguments), loads the
   libraries the module needs, applies the sandbox (the one every compiler runs in:
   grader/toolchain/sandbox/), starts the pool of threads, makes every buffer of the
   checked passes, and only then loads the student's module, fills the __constant__
   symbols by name, and runs the launch once per pass: pass 0 with every
   buffer ending on a guard page and the threads of each block in forward order, pass 1
   with every buffer starting on a guard page and the threads in reverse order. Each pass
   writes every buffer back with the fill around it (DIR/out.PASS.K.bin), for the parent
   to check. The first pass's printf output goes to DIR/printf.txt. Each pass record
   counts the output elements that two blocks stored into (stores.cpp); on several pool
   threads, blocks that did leave it to the parent to run the launch again on one. When
   the two passes left different outputs, a third runs the blocks one at a time to find
   elements that two blocks wrote ("overlap"); an output blocks add to that a second block
   updated with a plain store is found by the store hooks of a pass on one pool thread
   ("lost"). Those records, and a "hazard" of two threads storing one element (waw),
   narrow a race to the case it showed in, where the "twice" record after the passes
   finds every element the two orders left different stored twice, holding values those
   stores left (write_twice): each pass, and that
   record, ends with a "seal" record, which carries the job's token and counts the ones
   the runtime wrote (output.cpp).

   A launch of several kernels runs each in a worker of its own. Its __device__ variables
   go from one to the next: the job names them ("carry"), the first pass writes each back
   (DIR/carry_NAME.bin), and the next kernel's job fills them as it fills constants, so
   every pass of that kernel starts from them.

   Records go to file descriptor FD, a pipe the parent reads: a kernel can add lines to
   it, but not take back what was written. Everything before the "load" record is
   written before any code of the submission runs, so the parent believes it; what
   follows may be the submission's own writing, and the parent treats it as such. */
#include <dlfcn.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sandbox.h"
#include "scheduler.h"

namespace rt {
bool module_preload(const std::vector<std::string>& paths, std::string* error);
bool module_load(const char* path, std::string* error);
void module_snapshot();
void module_restore();
}  // namespace rt

using namespace rt;

struct Arg {
    bool buffer = false;
    size_t elements = 0;
    size_t width = 4; /* bytes per element */
    bool output = false;
    bool accumulates = false; /* an output blocks add to: written by more than one block */
    std::string name;
    std::string ctype;
    std::string value;
    int index = 0; /* buffer ordinal */
};

struct Constant {
    std::string name;
    size_t bytes = 0;
};

/* What job.txt says: every value of it, since read_job refuses a job without one. */
struct Job {
    std::string module, kernel;
    std::vector<std::string> preload; /* libraries the module needs, in load order */
    GUint3 grid{}, block{};
    size_t shared = 0;
    int jobs = 0;
    double timeout = 0;
    int passes = 0;
    size_t output_limit = 0;
    Policy policy;
    std::vector<Arg> args;
    std::vector<Constant> constants; /* filled before the first pass */
    std::vector<Constant> carried;   /* written back after it */
    bool profile = false;            /* the first pass's memory profile (profile.cpp) */
    bool apart = false;              /* the blocks store disjoint elements (job.py) */
    std::vector<std::string> variables; /* whose accesses it counts */
};

static std::string rest(std::istringstream& in) {
    std::string r;
    std::getline(in >> std::ws, r);
    return r;
}

/* A job.txt the runner does not read as the grader wrote it: the two disagree, which is
   the grader's mistake, never the submission's (nothing of it has run yet). */
[[noreturn]] static void refuse(const std::string& why) {
    fail("job_key", why.c_str(), EXIT_USAGE);
}

static void read_line(JobKey key, std::istringstream& in, Job* job, int* buffers) {
    switch (key) {
        case JOB_MODULE: job->module = rest(in); break;
        case JOB_KERNEL: in >> job->kernel; break;
        case JOB_GRID: in >> job->grid.x >> job->grid.y >> job->grid.z; break;
        case JOB_BLOCK: in >> job->block.x >> job->block.y >> job->block.z; break;
        case JOB_SHARED: in >> job->shared; break;
        case JOB_JOBS: in >> job->jobs; break;
        case JOB_TIMEOUT: in >> job->timeout; break;
        case JOB_PASSES: in >> job->passes; break;
        case JOB_HAZARDS: in >> g_hazards; break;
        case JOB_PROFILE: in >> job->profile; break;
        case JOB_APART: in >> job->apart; break;
        case JOB_VARIABLE: job->variables.push_back(rest(in)); break;
        case JOB_OUTPUT_LIMIT: in >> job->output_limit; break;
        case JOB_MEMORY_HEADROOM: in >> job->policy.memory_headroom; break;
        case JOB_CPU: in >> job->policy.cpu; break;
        case JOB_FSIZE: in >> job->policy.fsize; break;
        case JOB_REQUIRE_FS: in >> job->policy.require_fs; break;
        case JOB_REQUIRE_NET: in >> job->policy.require_net; break;
        case JOB_SCRATCH: job->policy.scratch = rest(in); break;
        case JOB_UID: in >> job->policy.uid >> job->policy.gid; break;
        case JOB_PRELOAD: job->preload.push_back(rest(in)); break;
        case JOB_ARG: {
            Arg a;
            std::string kind;
            in >> kind;
            if (kind == "buffer") {
                a.buffer = true;
                int out = 0;
                in >> a.elements >> out >> a.width;
                a.output = out != 0;
                a.accumulates = out == 2;
                a.name = rest(in);
                a.index = (*buffers)++;
            } else {
                in >> a.ctype >> a.value;
            }
            job->args.push_back(a);
            break;
        }
        case JOB_CONSTANT:
        case JOB_CARRY: {
            Constant c;
            in >> c.bytes >> c.name;
            (key == JOB_CARRY ? job->carried : job->constants).push_back(c);
            break;
        }
    }
}

/* The job, with each key of it as many times as the contract says; else the runner
   stops with an "error" record (what=job, or job_key for a job it does not read). */
static void read_job(Job* job) {
    std::ifstream f(FILE_JOB);
    if (!f) fail("job", "job.txt is missing or incomplete", EXIT_USAGE);
    int seen[JOB_COUNT] = {};
    int buffers = 0;
    std::string line;
    while (std::getline(f, line)) {
        std::istringstream in(line);
        std::string word;
        if (!(in >> word)) continue;
        int key = key_of(JOB_RULES, JOB_COUNT, word.c_str());
        if (key < 0) refuse("a key it does not know, \"" + word + "\"");
        ++seen[key];
        read_line((JobKey)key, in, job, &buffers);
    }
    int wrong = key_miscounted(JOB_RULES, JOB_COUNT, seen);
    if (wrong >= 0) {
        refuse("the key \"" + std::string(JOB_RULES[wrong].word) + "\" " +
               std::to_string(seen[wrong]) + " times");
    }
    if (job->profile && job->jobs != 1) refuse("a profile on more than one pool thread");
}

/* A file of the job folder: `pattern` (contract.h's FILE_*) with each {} replaced by the
   next of `parts`. */
static std::string file_name(const char* pattern, std::initializer_list<std::string> parts) {
    std::string name = pattern;
    for (const std::string& part : parts) name.replace(name.find("{}"), 2, part);
    return name;
}

/* `bytes` bytes of the file at `path`, from offset `at`. */
static bool read_file(const std::string& path, void* dst, size_t bytes, off_t at = 0) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    size_t off = 0;
    while (off < bytes) {
        ssize_t n = pread(fd, static_cast<char*>(dst) + off, bytes - off, at + (off_t)off);
        if (n <= 0) break;
        off += (size_t)n;
    }
    close(fd);
    return off == bytes;
}

static bool write_file(const std::string& path, const void* src, size_t bytes) {
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    size_t off = 0;
    while (off < bytes) {
        ssize_t n = write(fd, static_cast<const char*>(src) + off, bytes - off);
        if (n <= 0) break;
        off += (size_t)n;
    }
    close(fd);
    return off == bytes;
}

/* The accesses a profiled block logs before it makes requests of them: 24 MiB, held
   before the sandbox limits memory. */
constexpr size_t PROFILE_LOG = 1u << 20;

struct KernelSig {
    int magic, nparams, max_threads, reserved;
    int codes[1];
};

static double now() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The values of every constant the job fills, read before the module is loaded. */
static std::vector<std::vector<char>> read_constants(const Job& job) {
    std::vector<std::vector<char>> values;
    for (const Constant& c : job.constants) {
        values.emplace_back(c.bytes);
        if (!read_file(file_name(FILE_CONSTANT, {c.name}), values.back().data(), c.bytes)) {
            fail("constant_file", c.name.c_str(), EXIT_SETUP);
        }
    }
    return values;
}

/* A variable of the module, as its registration describes it: grader_var_NAME holds its
   memory space (1: __constant__), whether it is writable and its size, and
   grader_addr_NAME returns where it is. */
struct Variable {
    void* at;
    size_t bytes;
    bool constant, writable;
};
static Variable module_variable(const std::string& name) {
    const long long* info = static_cast<const long long*>(
        dlsym(module.handle, ("grader_var_" + name).c_str()));
    void* (*addr)() = reinterpret_cast<void* (*)()>(
        dlsym(module.handle, ("grader_addr_" + name).c_str()));
    if (!info || !addr) fail("constant_missing", name.c_str(), EXIT_LOAD);
    const int* head = reinterpret_cast<const int*>(info);
    return Variable{addr(), (size_t)info[2], head[1] == 1, head[2] != 0};
}

/* A writable variable of the module, by name; `*bytes` becomes the smaller of its size
   and `*bytes`. */
static void* variable(const Constant& c, size_t* bytes) {
    Variable v = module_variable(c.name);
    if (!v.writable) fail("constant_readonly", c.name.c_str(), EXIT_LOAD);
    if (v.bytes < *bytes) *bytes = v.bytes;
    return v.at;
}

/* Every constant, by name. */
static void set_constants(const Job& job, const std::vector<std::vector<char>>& values) {
    for (size_t i = 0; i < job.constants.size(); ++i) {
        size_t bytes = job.constants[i].bytes;
        void* at = variable(job.constants[i], &bytes);
        memcpy(at, values[i].data(), bytes);
    }
}

/* Each carried variable as the first pass left it, for the launch's next kernel. */
static void write_carried(const Job& job) {
    for (const Constant& c : job.carried) {
        size_t bytes = c.bytes;
        void* at = variable(c, &bytes);
        std::string out = file_name(FILE_CARRY, {c.name});
        if (!write_file(out, at, bytes)) fail("output_file", out.c_str(), EXIT_FAULT);
    }
}

/* Every buffer of one pass, filled from its input file: starting right after the
   leading guard page in pass 1, ending on the trailing one in the others. */
static std::vector<Area> make_buffers(const Job& job, int pass) {
    std::vector<Area> areas;
    for (const Arg& a : job.args) {
        if (!a.buffer) continue;
        Area area;
        if (!area_create(&area, a.elements * a.width, pass != 1, a.width, CANARY)) {
            fail("allocation", a.name.c_str(), EXIT_SETUP);
        }
        if (!read_file(file_name(FILE_INPUT, {std::to_string(a.index)}), area.data,
                       a.elements * a.width)) {
            fail("buffer_file", a.name.c_str(), EXIT_SETUP);
        }
        areas.push_back(area);
    }
    return areas;
}

/* What a seal and a profile record carry, from its file, which is then blanked: the
   submission's code, which runs in this process later, cannot read it there. */
static std::string take_token() {
    char token[64];
    int fd = open(FILE_TOKEN, O_RDWR | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : pread(fd, token, sizeof(token), 0);
    char blank[sizeof(token)] = {};
    bool blanked = n > 0 && pwrite(fd, blank, (size_t)n, 0) == n;
    if (fd >= 0) close(fd);
    if (!blanked) fail("token", "the job's token cannot be read and blanked", EXIT_SETUP);
    std::string read(token, (size_t)n);
    return read.substr(0, read.find_first_of(" \n"));
}

/* The file pass `pass` writes buffer `k` back to (grader/backends/cpu/job.py makes it). */
static std::string out_name(int pass, size_t k) {
    return file_name(FILE_OUTPUT, {std::to_string(pass), std::to_string(k)});
}

/* The buffer and the fill on its open side (before it in pass 0, after it in pass 1):
   the parent counts the changed fill words itself. */
static void write_back(const Area& a, int pass, size_t k) {
    const char* lo = pass == 0 ? a.lo : a.data;
    const char* hi = pass == 0 ? a.data + a.bytes : a.lo + a.lo_len;
    std::string out = out_name(pass, k);
    if (!write_file(out, lo, (size_t)(hi - lo))) fail("output_file", out.c_str(), EXIT_FAULT);
}

/* The buffer's own bytes in what a pass wrote back (write_back: after the fill in pass
   0, before it in pass 1). */
static bool read_output(int pass, const Arg& a, std::vector<char>* data) {
    std::string path = out_name(pass, (size_t)a.index);
    struct stat st;
    data->resize(a.elements * a.width);
    if (stat(path.c_str(), &st) != 0 || (size_t)st.st_size < data->size()) return false;
    off_t at = pass == 0 ? st.st_size - (off_t)data->size() : 0;
    return read_file(path, data->data(), data->size(), at);
}

/* Whether the passes left any output different (the outputs they wrote back). */
static bool passes_differ(const Job& job) {
    for (const Arg& a : job.args) {
        if (!a.buffer || !a.output) continue;
        std::vector<char> first, second;
        if (!read_output(0, a, &first) || !read_output(1, a, &second)) return false;
        if (first != second) return true;
    }
    return false;
}

/* After the passes, where a record that narrows a race saw elements stored twice: how
   many elements of the buffers the two thread orders left different that those stores
   do not explain ("twice", sealed): none seen stored twice, or a value that the stores
   twice did not leave (rt.h's twice_note). Bit for bit: the parent's comparison, which
   lets float sums differ a little, finds no element this one does not. */
static void write_twice(const Job& job) {
    long long outside = 0;
    for (const Arg& a : job.args) {
        if (!a.buffer) continue;
        std::vector<char> first, second;
        if (!read_output(0, a, &first) || !read_output(1, a, &second)) return;
        if (first == second) continue;
        for (size_t e = 0; e < a.elements; ++e) {
            const char *x = first.data() + e * a.width, *y = second.data() + e * a.width;
            if (memcmp(x, y, a.width) != 0) outside += !twice_explains(a.index, e, x, y, a.width);
        }
    }
    Line l;
    l.str("twice").kv("outside", outside);
    write_narrowing(l);
}

/* The launch's shape: what the pool makes each thread's stacks for before the sandbox,
   and part of every pass's launch. */
static void shape_of(const Job& job, Launch* L) {
    L->block = job.block;
    L->grid = job.grid;
    L->nthreads = (int)(job.block.x * job.block.y * job.block.z);
    L->shared_bytes = job.shared;
}

/* One pass over `areas`, its buffers (made here for the writers' pass, whose memory the
   checked passes have given back by then); returns its conflicts (stores.cpp). */
static long long run_pass(const Job& job, const std::vector<void*>& loop_call, const int* codes,
                          int pass, std::vector<Area> areas) {
    current_pass = pass;
    /* past the checked passes: the blocks one at a time, to learn who wrote what */
    bool writers = pass >= job.passes;
    bool end_aligned = pass != 1;
    if (writers) areas = make_buffers(job, pass);
    std::vector<Region> regions;
    for (size_t k = 0; k < areas.size(); ++k) {
        const Area& area = areas[k];
        regions.push_back(Region{area.map, area.map + area.map_len, area.data, area.bytes,
                                 REGION_BUFFER, (int)k});
    }
    regions_set(regions);
    std::vector<char*> outputs;
    for (const Arg& a : job.args) {
        if (a.buffer && a.output) outputs.push_back(areas[(size_t)a.index].data);
    }
    bool profiled = job.profile && pass == 0;
    /* One pool thread runs the blocks in grid order, whichever stores into an element
       last, and blocks that store apart (job.apart) store none twice: which blocks did
       matters only to the writers' pass, a census run's passes (hazards, and loads of
       what another block stored: stores_read), a profile and an output blocks add to (a
       lost update), so the rest of their stores call no hook (a barrier-free kernel's
       every store would). */
    bool alone = pool_size() == 1;
    bool every = !(alone || job.apart) || writers || profiled || g_hazards;
    stores_arm(outputs, writers || alone, writers, every);
    /* Argument slots: 8 bytes each, read by the module as the parameter's own type. */
    std::vector<unsigned long long> slots(job.args.size() + 1);
    std::vector<void*> argv(job.args.size() + 1);
    for (size_t i = 0; i < job.args.size(); ++i) {
        const Arg& a = job.args[i];
        unsigned long long bits = 0;
        if (a.buffer) {
            bits = (unsigned long long)(uintptr_t)areas[(size_t)a.index].data;
        } else {
            int base = codes[i] & 0xff, depth = (codes[i] >> 8) & 0xf;
            if (depth == 0 && base == grader::T_FLOAT) {
                float f = strtof(a.value.c_str(), nullptr);
                memcpy(&bits, &f, 4);
            } else if (depth == 0 && base == grader::T_DOUBLE) {
                double d = strtod(a.value.c_str(), nullptr);
                memcpy(&bits, &d, 8);
            } else if (a.value[0] == '-') {
                bits = (unsigned long long)strtoll(a.value.c_str(), nullptr, 10);
            } else {
                bits = strtoull(a.value.c_str(), nullptr, 10);
            }
        }
        slots[i] = bits;
        argv[i] = &slots[i];
    }
    Launch L;
    shape_of(job, &L);
    L.loop = reinterpret_cast<LoopFn>(loop_call[0]);
    L.call = reinterpret_cast<CallFn>(loop_call[1]);
    L.args = argv.data();
    L.reverse = pass == 1;
    L.end_aligned = end_aligned;
    L.serial = writers;
    L.nblocks = (long)job.grid.x * job.grid.y * job.grid.z;
    L.module = module.handle;
    L.tls_anchor = reinterpret_cast<void* (*)()>(dlsym(module.handle, "grader_tls_anchor"));
    blockDim = job.block;
    gridDim = job.grid;
    grader_rt_float_atomics = 0;
    output_enable(pass == 0);
    if (writers) {
        std::vector<Tracked> outputs;
        for (const Arg& a : job.args) {
            if (a.buffer && a.output && !a.accumulates) {
                const Area& area = areas[(size_t)a.index];
                outputs.push_back(Tracked{area.data, area.bytes, a.index, a.width});
            }
        }
        writers_begin(outputs, job.grid);
    }
    if (profiled) {
        L.needs_fibers.store(true); /* every thread in the fibers' copy of the kernel */
        profile_begin(areas, L.nthreads);
    }
    /* the pass that learns which block wrote what runs every block on one thread (job.py's
       _cpu_limit counts each phase's most) */
    watchdog_arm(writers ? job.timeout / 2 : job.timeout, "kernel", writers ? 1 : pool_size());
    Counts counts;
    counts_take(&counts); /* from zero: nothing before this pass counts */
    double t0 = now();
    pool_run(&L);
    double seconds = now() - t0;
    watchdog_disarm();
    counts_take(&counts);
    if (profiled) profile_end();
    long long conflicts = stores_disarm();
    if (writers) writers_end();
    Divergence d = divergence_take();
    if (d.set) {
        Line l;
        l.str("divergence").kv("what", d.what).kv("pass", pass);
        l.kv3("block", d.block.x, d.block.y, d.block.z);
        l.kv3("thread", d.thread.x, d.thread.y, d.thread.z).kv("line", d.line);
        l.kv3("other", d.other.x, d.other.y, d.other.z).kv("other_line", d.other_line);
        l.kv("other_state", d.other_state).kv("op", d.op);
        l.write();
    }
    for (size_t k = 0; k < areas.size() && !writers; ++k) write_back(areas[k], pass, k);
    regions_set({});
    for (Area& a : areas) area_destroy(&a);
    Line l;
    l.str("pass").kv("n", pass).kv("ms", (long long)(seconds * 1e6) / 1000);
    l.kv("us", (long long)(seconds * 1e6));
    l.kv("fibers", L.needs_fibers.load() ? 1 : 0).kv("float_atomics", grader_rt_float_atomics);
    l.kv("shared_loads", (long long)counts.shared_loads).kv("atomics", (long long)counts.atomics);
    l.kv("conflicts", conflicts).kv("crossed", stores_crossed());
    l.write();
    return conflicts;
}

static int run(const char* dir, int records) {
    report_use_fd(records);
    if (chdir(dir) != 0) fail("job", "cannot enter the job folder", EXIT_USAGE);
    Job job;
    read_job(&job);
    std::string token = take_token();
    seal_prepare(token);
    if (job.profile) profile_prepare(PROFILE_LOG, token);
    if (!stores_reserve()) fail("shadow", "the stores' shadow cannot be reserved", EXIT_SETUP);
    signals_install();
    signals_thread_init();
    output_init(job.output_limit);
    std::string error;
    if (!module_preload(job.preload, &error)) fail("preload", error.c_str(), EXIT_SETUP);
    SandboxState state;
    if (!sandbox_before_threads(job.policy, &state)) {
        sandbox_report(state);
        return EXIT_SANDBOX;
    }
    watchdog_start();
    Launch shape;
    shape_of(job, &shape);
    int threads = pool_start(job.jobs < 1 ? 1 : job.jobs, shape);
    if (threads == 0) fail("threads", "no thread of the pool could start", EXIT_SETUP);
    std::vector<std::vector<Area>> buffers;
    for (int pass = 0; pass < job.passes; ++pass) buffers.push_back(make_buffers(job, pass));
    std::vector<Stored> outputs;
    for (const Arg& a : job.args) {
        if (a.buffer && a.output) outputs.push_back(Stored{a.elements, a.width, a.accumulates, a.index});
    }
    stores_prepare(outputs);
    std::vector<std::vector<char>> constants = read_constants(job);
    if (!sandbox_after_threads(job.policy, &state)) {
        sandbox_report(state);
        return EXIT_SANDBOX;
    }
    sandbox_report(state);
    Line().str("pool").kv("threads", threads).write();
    /* From here on the submission's code runs (its global constructors at dlopen). */
    Line().str("load").write();

    watchdog_arm(job.timeout, "load", 1); /* the constructors run on this thread */
    if (!module_load(job.module.c_str(), &error)) fail("load", error.c_str(), EXIT_LOAD);
    watchdog_disarm();
    std::vector<void*> fns = {dlsym(module.handle, ("grader_loop_" + job.kernel).c_str()),
                              dlsym(module.handle, ("grader_call_" + job.kernel).c_str())};
    const KernelSig* sig = static_cast<const KernelSig*>(
        dlsym(module.handle, ("grader_sig_" + job.kernel).c_str()));
    if (!fns[0] || !fns[1] || !sig) fail("kernel_missing", job.kernel.c_str(), EXIT_LOAD);
    if (sig->nparams != (int)job.args.size()) {
        Line().str("error").kv("what", "arity").kv("params", sig->nparams)
            .kv("args", (long long)job.args.size()).write();
        return EXIT_LOAD;
    }
    set_constants(job, constants);
    for (const std::string& name : job.variables) {
        Variable v = module_variable(name);
        profile_variable(v.at, v.bytes, v.constant);
    }
    module_snapshot();
    bool float_atomics = false; /* sums in another order differ without a mistake */
    long long conflicts = 0;
    for (int pass = 0; pass < job.passes; ++pass) {
        if (pass) module_restore();
        conflicts += run_pass(job, fns, sig->codes, pass, std::move(buffers[(size_t)pass]));
        if (pass == 0) write_carried(job);
        if (pass == 0) hazards_report();
        seal_write();
        float_atomics = float_atomics || grader_rt_float_atomics;
    }
    /* Blocks that store into one element, run at once, leave whatever the timing left:
       the parent runs such a launch again on one pool thread, where the blocks' order
       alone decides, and where outputs that differ between the two orders are the
       blocks' doing (a last block that rewrites what the others stored, after an atomic
       says it is last, leaves the same either way). */
    bool differ = !float_atomics && passes_differ(job);
    if (job.passes == 2 && differ && (pool_size() == 1 || !conflicts)) {
        module_restore();
        run_pass(job, fns, sig->codes, job.passes, {});
        seal_write();
    }
    if (job.passes == 2 && twice_any()) {
        write_twice(job);
        seal_write();
    }
    output_flush(FILE_PRINTF);
    Line().str("done").write();
    return EXIT_OK;
}

int main(int argc, char** argv) {
    if (argc == 4 && strcmp(argv[1], "run") == 0) _exit(run(argv[2], atoi(argv[3])));
    fprintf(stderr, "usage: runner run DIR FD\n");
    return EXIT_USAGE;
}
