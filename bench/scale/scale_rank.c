/*
 * scale_rank: one rank of a scale run through the C API alone (no torch).
 *
 *   scale_rank RANK NRANKS RANKS_PER_HOST DIR
 *
 * scripts/scale.sh starts NRANKS of these on this machine. Ranks meet through
 * files in DIR; rank r says it is on host r / RANKS_PER_HOST, so ranks of one
 * "host" share memory and hosts talk over TCP (loopback). Each rank:
 *   1. publishes its listening address and reads every other rank's;
 *   2. creates the communicator (timed);
 *   3. runs every collective at several counts (1, 7, 1031, and 0 where an
 *      empty op is allowed), plus a send/recv ring, a barrier and a split
 *      into two halves, checking each result against the value it must have
 *      (integer-valued float32 data, so every sum is exact);
 *   4. times a small all_reduce;
 *   5. with SCALE_TIME_SIZES set (bytes, comma-separated, as the cost model
 *      counts them), times all_reduce, all_gather, reduce_scatter and
 *      broadcast at each size, on the communicator (the library's choice) and
 *      on one more communicator per algorithm override (ring/chain, rd/tree,
 *      hd, hier) that loads the topology the first one learned: the median and
 *      the best of SCALE_TIME_REPS (default 5) barrier-separated calls each;
 *   6. writes one JSON object to DIR/rank-RANK.json: timestamps, failed
 *      checks, the CPU time of its init, its sockets, threads and memory
 *      before and after, and the op times (rank 0 adds each communicator's
 *      hcclGoCommInfo, which holds the cost model's inputs).
 * It exits 0 when every call succeeded (failed checks are in the JSON), 1 when
 * a call failed.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "hccl_go.h"

static int rank, nranks, per_host, timing;
static const char* dir;
static char** hosts; /* per rank: its emulated host */
static char failures[8192];
static int nchecks, nfailed;

static double wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU seconds this process has used (user + system, every thread). */
static double cpu(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

static void die(const char* what, hcclGoResult_t r, hcclGoComm_t comm) {
  char m[2048];
  hcclGoGetLastError(comm, m, sizeof m);
  fprintf(stderr, "scale_rank %d: %s: %s: %s\n", rank, what, hcclGoGetErrorString(r), m);
  exit(1);
}

static void check(hcclGoResult_t r, const char* what, hcclGoComm_t comm) {
  if (r != hcclGoSuccess) die(what, r, comm);
}

/* A rank's resources from /proc/self. */
typedef struct {
  long sockets, fds, threads;
  long rss_kb, anon_kb, shmem_kb, pss_kb;
} usage_t;

static long status_field(const char* path, const char* key) {
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, n) == 0 && line[n] == ':') {
      v = strtol(line + n + 1, NULL, 10);
      break;
    }
  }
  fclose(f);
  return v;
}

static usage_t usage(void) {
  usage_t u = {0};
  DIR* d = opendir("/proc/self/fd");
  struct dirent* e;
  char path[320], target[256];
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    u.fds++;
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n > 0) {
      target[n] = 0;
      if (strncmp(target, "socket:", 7) == 0) u.sockets++;
    }
  }
  if (d) closedir(d);
  u.fds--; /* the directory stream's own descriptor */
  u.threads = status_field("/proc/self/status", "Threads");
  u.rss_kb = status_field("/proc/self/status", "VmRSS");
  u.anon_kb = status_field("/proc/self/status", "RssAnon");
  u.shmem_kb = status_field("/proc/self/status", "RssShmem");
  u.pss_kb = status_field("/proc/self/smaps_rollup", "Pss");
  return u;
}

static void usage_json(FILE* f, const char* name, usage_t u) {
  fprintf(f,
          "\"%s\": {\"sockets\": %ld, \"fds\": %ld, \"threads\": %ld, \"rss_kb\": %ld, \"anon_kb\": %ld, "
          "\"shmem_kb\": %ld, \"pss_kb\": %ld}",
          name, u.sockets, u.fds, u.threads, u.rss_kb, u.anon_kb, u.shmem_kb, u.pss_kb);
}

/* The value rank r contributes at element i: small integers, so sums over
 * thousands of ranks stay exact in float32. */
static float val(int r, size_t i) { return (float)((r * 7 + (int)(i % 1000) * 3) % 11 + 1); }

static void expect(const char* op, size_t count, size_t i, float got, float want) {
  nchecks++;
  if (got == want) return;
  if (nfailed++ < 8) {
    size_t n = strlen(failures);
    snprintf(failures + n, sizeof failures - n, "%s%s count %zu element %zu: %g, want %g", n ? "; " : "", op, count, i,
             got, want);
  }
}

/* Waits for work, failing the rank on an error. */
static void finish(hcclGoWork_t w, const char* what, hcclGoComm_t comm) {
  hcclGoResult_t r = hcclGoWorkWait(w, -1);
  if (r != hcclGoSuccess) {
    char m[2048];
    hcclGoWorkError(w, m, sizeof m);
    fprintf(stderr, "scale_rank %d: %s: %s\n", rank, what, m);
    exit(1);
  }
  hcclGoWorkFree(w);
}

static void fill(float* b, size_t n, int r, size_t offset) {
  for (size_t i = 0; i < n; i++) b[i] = val(r, offset + i);
}

/* Every collective on comm (rank me of n) at one count. */
static void collectives(hcclGoComm_t comm, int me, int n, size_t count, const char* prefix) {
  size_t big = count * (size_t)n;
  float* a = calloc(big + 1, sizeof(float));
  float* b = calloc(big + 1, sizeof(float));
  char op[64];

  /* all_reduce: sum and max. */
  fill(a, count, me, 0);
  check(hcclGoAllReduce(a, b, count, hcclGoFloat32, hcclGoSum, 0, comm, 0, NULL), "all_reduce", comm);
  snprintf(op, sizeof op, "%sall_reduce sum", prefix);
  for (size_t i = 0; i < count; i++) {
    float want = 0;
    for (int r = 0; r < n; r++) want += val(r, i);
    expect(op, count, i, b[i], want);
  }
  check(hcclGoAllReduce(a, b, count, hcclGoFloat32, hcclGoMax, 0, comm, 0, NULL), "all_reduce max", comm);
  snprintf(op, sizeof op, "%sall_reduce max", prefix);
  for (size_t i = 0; i < count; i++) {
    float want = 0;
    for (int r = 0; r < n; r++) want = val(r, i) > want ? val(r, i) : want;
    expect(op, count, i, b[i], want);
  }

  /* broadcast from the last rank, in place. */
  fill(a, count, me, 0);
  check(hcclGoBroadcast(a, a, count, hcclGoFloat32, n - 1, comm, 0, NULL), "broadcast", comm);
  snprintf(op, sizeof op, "%sbroadcast", prefix);
  for (size_t i = 0; i < count; i++) expect(op, count, i, a[i], val(n - 1, i));

  /* reduce to rank 0. */
  fill(a, count, me, 0);
  check(hcclGoReduce(a, b, count, hcclGoFloat32, hcclGoSum, 0, 0, comm, 0, NULL), "reduce", comm);
  snprintf(op, sizeof op, "%sreduce", prefix);
  if (me == 0) {
    for (size_t i = 0; i < count; i++) {
      float want = 0;
      for (int r = 0; r < n; r++) want += val(r, i);
      expect(op, count, i, b[i], want);
    }
  }

  /* all_gather: rank r's block is val(r, ...). */
  fill(a, count, me, 0);
  check(hcclGoAllGather(a, b, count, hcclGoFloat32, comm, 0, NULL), "all_gather", comm);
  snprintf(op, sizeof op, "%sall_gather", prefix);
  for (int r = 0; r < n; r++)
    for (size_t i = 0; i < count; i++) expect(op, count, r * count + i, b[r * count + i], val(r, i));

  /* reduce_scatter: block j of every rank's input is val(rank, j*count + i). */
  fill(a, big, me, 0);
  check(hcclGoReduceScatter(a, b, count, hcclGoFloat32, hcclGoSum, 0, comm, 0, NULL), "reduce_scatter", comm);
  snprintf(op, sizeof op, "%sreduce_scatter", prefix);
  for (size_t i = 0; i < count; i++) {
    float want = 0;
    for (int r = 0; r < n; r++) want += val(r, me * count + i);
    expect(op, count, i, b[i], want);
  }

  /* all_to_all: rank r sends block j = val(r, j*count + i) to rank j. */
  fill(a, big, me, 0);
  check(hcclGoAllToAll(a, b, count, hcclGoFloat32, comm, 0, NULL), "all_to_all", comm);
  snprintf(op, sizeof op, "%sall_to_all", prefix);
  for (int r = 0; r < n; r++)
    for (size_t i = 0; i < count; i++) expect(op, count, r * count + i, b[r * count + i], val(r, me * count + i));

  /* gather to rank 1 % n, scatter from rank 0. */
  int groot = 1 % n;
  fill(a, count, me, 0);
  check(hcclGoGather(a, b, count, hcclGoFloat32, groot, comm, 0, NULL), "gather", comm);
  snprintf(op, sizeof op, "%sgather", prefix);
  if (me == groot)
    for (int r = 0; r < n; r++)
      for (size_t i = 0; i < count; i++) expect(op, count, r * count + i, b[r * count + i], val(r, i));
  fill(a, big, me, 0);
  check(hcclGoScatter(a, b, count, hcclGoFloat32, 0, comm, 0, NULL), "scatter", comm);
  snprintf(op, sizeof op, "%sscatter", prefix);
  for (size_t i = 0; i < count; i++) expect(op, count, i, b[i], val(0, me * count + i));

  /* A ring of send/recv: each rank sends its block to the next. */
  if (n > 1) {
    hcclGoWork_t ws, wr;
    fill(a, count, me, 0);
    check(hcclGoRecv(b, count, hcclGoFloat32, (me + n - 1) % n, 7, comm, &wr), "recv", comm);
    check(hcclGoSend(a, count, hcclGoFloat32, (me + 1) % n, 7, comm, &ws), "send", comm);
    finish(ws, "send", comm);
    finish(wr, "recv", comm);
    snprintf(op, sizeof op, "%ssend/recv ring", prefix);
    for (size_t i = 0; i < count; i++) expect(op, count, i, b[i], val((me + n - 1) % n, i));
  }
  free(a);
  free(b);
}

/* Creates a communicator of every rank: a listener, its address published
 * as DIR/addr-TAG-RANK and everyone's read, then the init call. Sets
 * *t_addrs to when every address was known and *cpu_init to the CPU seconds
 * of the init call. */
static void connect_comm(const char* tag, const char* options, hcclGoComm_t* comm, double* t_addrs, double* cpu_init) {
  char** addrs = calloc(nranks, sizeof(char*));
  hcclGoListener_t l;
  char addr[256], path[512], tmp[512];
  /* Emulated hosts are all this machine: loopback. */
  check(hcclGoListenRank(nranks, rank, (const char* const*)hosts, "127.0.0.1", "listen_addr=127.0.0.1:0", &l, addr,
                         sizeof addr),
        "listen", 0);
  snprintf(tmp, sizeof tmp, "%s/addr%s-%d.tmp", dir, tag, rank);
  snprintf(path, sizeof path, "%s/addr%s-%d", dir, tag, rank);
  FILE* f = fopen(tmp, "w");
  fputs(addr, f);
  fclose(f);
  rename(tmp, path);
  for (int i = 0; i < nranks; i++) {
    addrs[i] = calloc(1, 256);
    snprintf(path, sizeof path, "%s/addr%s-%d", dir, tag, i);
    while ((f = fopen(path, "r")) == NULL) usleep(20000);
    if (fgets(addrs[i], 256, f) == NULL) die("rendezvous", 1, 0);
    fclose(f);
  }
  *t_addrs = wall();
  double c0 = cpu();
  check(
      hcclGoCommInitRank(comm, nranks, rank, l, (const char* const*)addrs, (const char* const*)hosts, "scale", options),
      "init", 0);
  *cpu_init = cpu() - c0;
  for (int i = 0; i < nranks; i++) free(addrs[i]);
  free(addrs);
}

static double median(double* v, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return v[n / 2];
}

/* The op-time phase (SCALE_TIME_SIZES): per communicator configuration,
 * the algorithm each op is forced to (NULL: not timed there; "auto": the
 * library's choice). Ops in the order of op_names. */
static const char* op_names[4] = {"allreduce", "allgather", "reducescatter", "broadcast"};
static const struct {
  const char* name;
  const char* spec; /* HCCL_GO_ALGO; NULL: the first communicator */
  const char* algo[4];
} configs[] = {
    {"auto", NULL, {"auto", "auto", "auto", "auto"}},
    {"ring", "allreduce=ring,allgather=ring,reducescatter=ring,broadcast=chain", {"ring", "ring", "ring", "chain"}},
    {"rd", "allreduce=rd,broadcast=tree", {"rd", NULL, NULL, "tree"}},
    {"hd", "allreduce=hd", {"hd", NULL, NULL, NULL}},
    {"hier", "allreduce=hier,allgather=hier,reducescatter=hier,broadcast=hier", {"hier", "hier", "hier", "hier"}},
};
#define NCONFIGS (sizeof configs / sizeof configs[0])

/* One call of op k on nbytes (the whole buffer as the cost model counts it:
 * all_gather's output, reduce_scatter's input); broadcast from rank 0. */
static void run_op(hcclGoComm_t comm, int k, size_t nbytes, float* a, float* b) {
  size_t count = nbytes / sizeof(float), block = count / (size_t)nranks;
  switch (k) {
    case 0:
      check(hcclGoAllReduce(a, b, count, hcclGoFloat32, hcclGoSum, 0, comm, 0, NULL), "timed all_reduce", comm);
      break;
    case 1:
      check(hcclGoAllGather(a, b, block, hcclGoFloat32, comm, 0, NULL), "timed all_gather", comm);
      break;
    case 2:
      check(hcclGoReduceScatter(a, b, block, hcclGoFloat32, hcclGoSum, 0, comm, 0, NULL), "timed reduce_scatter", comm);
      break;
    default:
      check(hcclGoBroadcast(a, a, count, hcclGoFloat32, 0, comm, 0, NULL), "timed broadcast", comm);
  }
}

/* Times every op of every configuration at every size into f (a JSON array's
 * items); rank 0 writes each communicator's info into infos. */
static void time_ops(hcclGoComm_t main_comm, FILE* f, FILE* infos) {
  const char* env = getenv("SCALE_TIME_SIZES");
  int reps = getenv("SCALE_TIME_REPS") ? atoi(getenv("SCALE_TIME_REPS")) : 5;
  if (reps < 1) reps = 1;
  size_t sizes[32];
  int nsizes = 0;
  for (const char* p = env; *p && nsizes < 32;) {
    size_t n = strtoull(p, (char**)&p, 10);
    /* Whole float32 blocks of every rank: all_gather and reduce_scatter. */
    size_t unit = sizeof(float) * (size_t)nranks;
    sizes[nsizes++] = n < unit ? unit : n / unit * unit;
    while (*p == ',' || *p == ' ') p++;
  }
  size_t most = 0;
  for (int i = 0; i < nsizes; i++) most = sizes[i] > most ? sizes[i] : most;
  float* a = calloc(most / sizeof(float) + 1, sizeof(float));
  float* b = calloc(most / sizeof(float) + 1, sizeof(float));
  double* t = calloc(reps, sizeof(double));
  int first = 1, first_info = 1;
  char topo_opts[1024], info[1 << 16];
  snprintf(topo_opts, sizeof topo_opts, "timeout_ms=300000;topo_file=%s/topo.json;algo=", dir);
  for (size_t c = 0; c < NCONFIGS; c++) {
    /* One rank per host has no hierarchy to force. */
    if (per_host == 1 && strcmp(configs[c].name, "hier") == 0) continue;
    hcclGoComm_t comm = main_comm;
    if (configs[c].spec != NULL) {
      char opts[1200], tag[32];
      double t_addrs, cpu_init;
      snprintf(opts, sizeof opts, "%s%s", topo_opts, configs[c].spec);
      snprintf(tag, sizeof tag, "-%s", configs[c].name);
      connect_comm(tag, opts, &comm, &t_addrs, &cpu_init);
    }
    if (rank == 0 && hcclGoCommInfo(comm, info, sizeof info) == hcclGoSuccess) {
      fprintf(infos, "%s\"%s\": %s", first_info ? "" : ", ", configs[c].name, info);
      first_info = 0;
    }
    for (int k = 0; k < 4; k++) {
      if (configs[c].algo[k] == NULL) continue;
      for (int i = 0; i < nsizes; i++) {
        run_op(comm, k, sizes[i], a, b); /* warm: buffers, first-use paths */
        for (int r = 0; r < reps; r++) {
          check(hcclGoBarrier(comm, 0, NULL), "barrier", comm);
          double t0 = wall();
          run_op(comm, k, sizes[i], a, b);
          t[r] = wall() - t0;
        }
        double med = median(t, reps); /* sorts t: t[0] is the best */
        fprintf(f,
                "%s{\"config\": \"%s\", \"op\": \"%s\", \"algo\": \"%s\", \"bytes\": %zu, \"us\": %.2f, "
                "\"us_min\": %.2f}",
                first ? "" : ", ", configs[c].name, op_names[k], configs[c].algo[k], sizes[i], med * 1e6, t[0] * 1e6);
        first = 0;
      }
    }
    if (comm != main_comm) check(hcclGoCommDestroy(comm), "destroy timed", comm);
  }
  free(a);
  free(b);
  free(t);
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: scale_rank RANK NRANKS RANKS_PER_HOST DIR\n");
    return 2;
  }
  double t_start = wall();
  rank = atoi(argv[1]);
  nranks = atoi(argv[2]);
  per_host = atoi(argv[3]);
  dir = argv[4];
  usage_t before = usage();
  hosts = calloc(nranks, sizeof(char*));

  const char* sizes = getenv("SCALE_TIME_SIZES");
  timing = sizes != NULL && *sizes != 0;
  for (int i = 0; i < nranks; i++) {
    hosts[i] = calloc(1, 32);
    snprintf(hosts[i], 32, "scale-host-%d", i / per_host);
  }
  /* When timing, the first communicator writes the topology it learned
   * (probed on a few emulated hosts) for the others to load. */
  char opts[1024] = "timeout_ms=300000";
  if (timing) snprintf(opts, sizeof opts, "timeout_ms=300000;topo_dump_file=%s/topo.json", dir);
  hcclGoComm_t comm;
  double t_addrs, cpu_init;
  connect_comm("", opts, &comm, &t_addrs, &cpu_init);
  double t_init = wall();
  usage_t after_init = usage();

  /* Every collective, including empty ones where they are allowed. */
  const size_t counts[] = {0, 1, 7, 1031};
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) collectives(comm, rank, nranks, counts[k], "");
  check(hcclGoBarrier(comm, 0, NULL), "barrier", comm);
  double t_checked = wall();

  /* A split into halves (even and odd ranks), its first op checked. */
  int half = rank % 2, nhalf = (nranks + 1 - half) / 2;
  int* members = calloc(nhalf, sizeof(int));
  for (int i = 0; i < nhalf; i++) members[i] = half + 2 * i;
  hcclGoComm_t child;
  double t_split0 = wall();
  check(hcclGoCommSplit(comm, nhalf, members, half ? "odd" : "even", NULL, &child), "split", comm);
  collectives(child, rank / 2, nhalf, 7, "split ");
  double t_split = wall() - t_split0;
  usage_t after_split = usage();
  check(hcclGoCommDestroy(child), "destroy split", comm);

  /* A small all_reduce, timed: median of 9 batches of 10. */
  float x[2] = {1, 2};
  double batches[9];
  for (int i = 0; i < 5; i++) check(hcclGoAllReduce(x, x, 2, hcclGoFloat32, hcclGoSum, 0, comm, 0, NULL), "warm", comm);
  for (int b = 0; b < 9; b++) {
    check(hcclGoBarrier(comm, 0, NULL), "barrier", comm);
    double t0 = wall();
    for (int i = 0; i < 10; i++)
      check(hcclGoAllReduce(x, x, 2, hcclGoFloat32, hcclGoSum, 0, comm, 0, NULL), "timed all_reduce", comm);
    batches[b] = (wall() - t0) / 10;
  }
  usage_t end = usage();

  /* The op times (several hosts only: on one host every op runs in the
   * shared-memory arena, which the cost model does not cost). */
  char *times = NULL, *infos = NULL;
  size_t times_len = 0, infos_len = 0;
  FILE* tf = open_memstream(&times, &times_len);
  FILE* inf = open_memstream(&infos, &infos_len);
  if (timing && per_host < nranks) time_ops(comm, tf, inf);
  fclose(tf);
  fclose(inf);

  char path[512], tmp[512];
  snprintf(tmp, sizeof tmp, "%s/rank-%d.tmp", dir, rank);
  snprintf(path, sizeof path, "%s/rank-%d.json", dir, rank);
  FILE* f = fopen(tmp, "w");
  fprintf(f, "{\"rank\": %d, \"nranks\": %d, \"ranks_per_host\": %d, ", rank, nranks, per_host);
  fprintf(f, "\"t_start\": %.6f, \"t_addrs\": %.6f, \"t_init\": %.6f, \"t_checked\": %.6f, ", t_start, t_addrs, t_init,
          t_checked);
  fprintf(f, "\"split_s\": %.6f, \"small_all_reduce_us\": %.2f, ", t_split, median(batches, 9) * 1e6);
  fprintf(f, "\"checks\": %d, \"failed\": %d, \"failures\": \"", nchecks, nfailed);
  for (const char* c = failures; *c; c++) fputc(*c == '"' ? '\'' : *c, f);
  fprintf(f, "\", ");
  usage_json(f, "before", before);
  fprintf(f, ", ");
  usage_json(f, "after_init", after_init);
  fprintf(f, ", ");
  usage_json(f, "after_split", after_split);
  fprintf(f, ", ");
  usage_json(f, "end", end);
  const char* lazy = getenv("HCCL_GO_LAZY_LINKS");
  fprintf(f, ", \"cpu_init_s\": %.6f, \"cores\": %ld, \"lazy_links\": \"%s\"", cpu_init, sysconf(_SC_NPROCESSORS_ONLN),
          lazy && *lazy ? lazy : "auto");
  if (timing) fprintf(f, ", \"op_times\": [%s], \"infos\": {%s}", times, infos);
  fprintf(f, "}\n");
  fclose(f);
  rename(tmp, path);
  free(times);
  free(infos);
  /* Destroy waits for every rank's last op: no rank leaves while a peer
   * still needs its links. */
  check(hcclGoCommDestroy(comm), "destroy", comm);
  return 0;
}
