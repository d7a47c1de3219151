/*
 * The isolation benchmark's probe (bench/isolation.py): what a latency-critical pod's thread
 * gets from its CPU. Built static (gcc -O2 -static) so it runs from a read-only bind mount in
 * any container, the lab's toolless busybox image included. It runs SCHED_OTHER, as a pod's
 * threads do (cyclictest asks for a real-time priority, which a pod does not have).
 *
 *   dutycycle calibrate
 *       How many work loops one millisecond holds on this CPU: the fastest of many short
 *       trials, so a trial a neighbour interrupted does not count.
 *   dutycycle run PERIODS PERIOD_US WORK_LOOPS WORK_US JOB_LOOPS
 *       (a) duty cycle: wakes on absolute deadlines one period apart (clock_nanosleep,
 *       CLOCK_MONOTONIC, TIMER_ABSTIME), does WORK_LOOPS loops (WORK_US on an idle CPU) and
 *       records how late that work finished: end - (deadline + WORK_US). Deadlines stay on
 *       one grid; work that ends past the next deadline skips the deadlines already gone
 *       (counted as "skipped"), so each period's lateness is that period's own delay, not a
 *       backlog that grows with the run's length.
 *       (b) a fixed CPU-bound job: JOB_LOOPS loops, timed.
 *
 * Prints one JSON line; the bench parses it (bench/isolation_bench/probe.py).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define CALIBRATE_CHUNK 100000ULL /* about 0.1 ms a trial: short enough that many run whole */
#define CALIBRATE_TRIALS 300

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A dependency chain the compiler cannot fold or vectorise: each loop costs the same. */
static uint64_t work(uint64_t loops, uint64_t x) {
    for (uint64_t i = 0; i < loops; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

static long involuntary_switches(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_nivcsw;
}

static void print_cpus(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    printf("\"cpus\":[");
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int first = 1;
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
            if (CPU_ISSET(cpu, &set)) {
                printf(first ? "%d" : ",%d", cpu);
                first = 0;
            }
        }
    }
    printf("]");
}

static int calibrate(void) {
    int64_t best = INT64_MAX;
    uint64_t sink = 1;
    for (int trial = 0; trial < CALIBRATE_TRIALS; trial++) {
        int64_t start = now_ns();
        sink = work(CALIBRATE_CHUNK, sink);
        int64_t took = now_ns() - start;
        if (took > 0 && took < best) best = took;
    }
    printf("{\"mode\":\"calibrate\",\"loops_per_ms\":%" PRIu64 ",\"sink\":%" PRIu64 ",",
           (uint64_t)(CALIBRATE_CHUNK * 1000000ULL / (uint64_t)best), sink & 1);
    print_cpus();
    printf("}\n");
    return 0;
}

static int parse(const char *text, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno || *end || end == text) return -1;
    *out = value;
    return 0;
}

static int run(char **argv) {
    uint64_t periods, period_us, work_loops, work_us, job_loops;
    if (parse(argv[0], &periods) || parse(argv[1], &period_us) || parse(argv[2], &work_loops) ||
        parse(argv[3], &work_us) || parse(argv[4], &job_loops) || periods == 0 ||
        period_us == 0) {
        fprintf(stderr, "dutycycle run: PERIODS PERIOD_US WORK_LOOPS WORK_US JOB_LOOPS, "
                        "positive integers\n");
        return 2;
    }
    int64_t *late = calloc(periods, sizeof *late);
    if (late == NULL) {
        fprintf(stderr, "dutycycle: no memory for %" PRIu64 " periods\n", periods);
        return 1;
    }
    memset(late, 0, periods * sizeof *late); /* touched now, not during the measurement */
    uint64_t sink = 1;
    long switches = involuntary_switches();
    int64_t period_ns = (int64_t)period_us * 1000;
    int64_t next = now_ns() + period_ns;
    uint64_t skipped = 0;
    for (uint64_t k = 0; k < periods; k++) {
        struct timespec deadline = {.tv_sec = next / 1000000000LL,
                                    .tv_nsec = next % 1000000000LL};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL) == EINTR) {
        }
        sink = work(work_loops, sink);
        int64_t end = now_ns();
        late[k] = end - (next + (int64_t)work_us * 1000);
        next += period_ns;
        if (end >= next) { /* deadlines already gone: skipped, not owed */
            uint64_t gone = (uint64_t)((end - next) / period_ns) + 1;
            skipped += gone;
            next += (int64_t)gone * period_ns;
        }
    }
    long duty_switches = involuntary_switches() - switches;
    int64_t start = now_ns();
    sink = work(job_loops, sink);
    int64_t job_ns = now_ns() - start;
    long job_switches = involuntary_switches() - switches - duty_switches;

    printf("{\"mode\":\"run\",\"periods\":%" PRIu64 ",\"period_us\":%" PRIu64
           ",\"work_loops\":%" PRIu64 ",\"work_us\":%" PRIu64 ",\"job_loops\":%" PRIu64
           ",\"job_ns\":%" PRId64 ",\"skipped\":%" PRIu64 ",\"duty_switches\":%ld,\"job_switches\":%ld,\"sink\":%" PRIu64
           ",",
           periods, period_us, work_loops, work_us, job_loops, job_ns, skipped, duty_switches,
           job_switches, sink & 1);
    print_cpus();
    printf(",\"late_ns\":[");
    for (uint64_t k = 0; k < periods; k++) printf(k ? ",%" PRId64 : "%" PRId64, late[k]);
    printf("]}\n");
    free(late);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "calibrate") == 0) return calibrate();
    if (argc == 7 && strcmp(argv[1], "run") == 0) return run(argv + 2);
    fprintf(stderr, "usage: dutycycle calibrate | dutycycle run PERIODS PERIOD_US WORK_LOOPS "
                    "WORK_US JOB_LOOPS\n");
    return 2;
}
