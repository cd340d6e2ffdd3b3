/*
 * The HIL rig's timing floor: what a plain C program gets from this emulated machine on the same
 * gpio-sim lines, measured in the same VM run and under the same load as the daemon it is compared with.
 * Written for the checks (Tests/HIL/guest/wiegand_checks.py, gpio_timing.py), independently of
 * ScanGate's Swift code; Tests/HIL/run compiles it on the host (gcc, libgpiod v1) into the run directory.
 *
 *   gpio-reference wiegand CHIP D0 D1 PULSE_US INTERVAL_US GAP_MS BITS...
 *       Sends each BITS ("0101...") as one Wiegand frame: idle high, a low pulse of PULSE_US on D0 for
 *       0 or D1 for 1, a bit every INTERVAL_US, GAP_MS between frames. As door.md describes the usual
 *       user-space sender: SCHED_FIFO priority 10, memory locked, busy-waiting on CLOCK_MONOTONIC
 *       through the whole frame, both lines in one request; each pulse and interval is timed from
 *       just before the call that starts the pulse, and a pulse never ends sooner than 20 us after
 *       that call returned.
 *   gpio-reference wiegand-at CHIP D0 D1 PULSE_US INTERVAL_US FIRST_NS PERIOD_MS BITS...
 *       The same sender, but frame k (from 0) starts at FIRST_NS + k * PERIOD_MS on CLOCK_MONOTONIC
 *       (a frame that would start late starts at once): the checks put its frames halfway between the
 *       daemon's, on two other lines, so both meet the host's noise of the same moment.
 *   gpio-reference pulses CHIP LINE ON_MS OFF_MS COUNT
 *       COUNT pulses high of ON_MS with OFF_MS between, timed with clock_nanosleep(TIMER_ABSTIME) at
 *       normal priority: the way an LED or buzzer thread sleeps between changes.
 *
 * SIGTERM stops at the next frame or pulse boundary, lines idle.
 * CHIP is a gpiochip name, path or label. Exit 0 when everything was sent; 2 for bad arguments; 1 with
 * one stderr line (naming the call and errno) when a GPIO call fails. Lines are left idle and released.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <gpiod.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static const char *consumer = "gpio-reference";
/* SIGTERM: stop at the next frame boundary (or pulse), leaving the lines idle. */
static volatile sig_atomic_t stopping = 0;

static void on_term(int sig) {
    (void)sig;
    stopping = 1;
}

static int usage(void) {
    fprintf(stderr, "usage: gpio-reference wiegand CHIP D0 D1 PULSE_US INTERVAL_US GAP_MS BITS... | "
                    "wiegand-at CHIP D0 D1 PULSE_US INTERVAL_US FIRST_NS PERIOD_MS BITS... | "
                    "pulses CHIP LINE ON_MS OFF_MS COUNT\n");
    return 2;
}

static int number(const char *text, long low, long high, long *out) {
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < low || v > high) {
        fprintf(stderr, "gpio-reference: '%s' is not a number in %ld-%ld\n", text, low, high);
        return -1;
    }
    *out = v;
    return 0;
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void spin_until(long long t) {
    while (now_ns() < t) {
    }
}

/* Sleeps to `t`; a SIGTERM ends the sleep early only when `interruptible` (between frames). */
static void sleep_until(long long t, int interruptible) {
    struct timespec ts = {.tv_sec = t / 1000000000LL, .tv_nsec = t % 1000000000LL};
    while (!(interruptible && stopping) && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static int fail(const char *what, const char *name) {
    fprintf(stderr, "gpio-reference: %s %s: %s (errno %d)\n", what, name, strerror(errno), errno);
    return 1;
}

static int set(struct gpiod_line *line, int value, const char *name) {
    if (gpiod_line_set_value(line, value) != 0) return fail("setting", name);
    return 0;
}

static struct gpiod_line *output(struct gpiod_chip *chip, long offset, int initial, const char *name) {
    struct gpiod_line *line = gpiod_chip_get_line(chip, (unsigned)offset);
    if (line == NULL) {
        fail("getting line", name);
        return NULL;
    }
    if (gpiod_line_request_output(line, consumer, initial) != 0) {
        fail("requesting as output line", name);
        return NULL;
    }
    return line;
}

/* Both lines in one request, set together (as a bulk): one ioctl per edge. */
static int set_pair(struct gpiod_line_bulk *pair, int d0, int d1) {
    int values[2] = {d0, d1};
    if (gpiod_line_set_value_bulk(pair, values) != 0) return fail("setting", "D0/D1");
    return 0;
}

/* `at`: frame k starts at FIRST_NS + k * PERIOD_MS (argv[4], argv[5]); otherwise GAP_MS (argv[4])
 * after the previous frame's last bit. */
static int wiegand(struct gpiod_chip *chip, int argc, char **argv, int at) {
    long d0o, d1o, pulse_us, interval_us, gap_ms = 0, period_ms = 0;
    long long first_ns = 0;
    int bits_from = at ? 6 : 5;
    if (argc < bits_from + 1 || number(argv[0], 0, 1023, &d0o) || number(argv[1], 0, 1023, &d1o) ||
        number(argv[2], 1, 100000, &pulse_us) || number(argv[3], 2, 1000000, &interval_us) || pulse_us >= interval_us)
        return usage();
    if (at) {
        char *end = NULL;
        errno = 0;
        first_ns = strtoll(argv[4], &end, 10);
        if (errno != 0 || end == argv[4] || *end != '\0' || first_ns <= 0 || number(argv[5], 1, 600000, &period_ms))
            return usage();
    } else if (number(argv[4], 0, 60000, &gap_ms)) {
        return usage();
    }
    for (int f = bits_from; f < argc; f++)
        if (argv[f][0] == '\0' || strspn(argv[f], "01") != strlen(argv[f])) return usage();

    struct sched_param param = {.sched_priority = 10};
    if (sched_setscheduler(0, SCHED_FIFO, &param) != 0) return fail("sched_setscheduler", "SCHED_FIFO 10");
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) return fail("mlockall", "current and future");

    struct gpiod_line *d0 = gpiod_chip_get_line(chip, (unsigned)d0o);
    struct gpiod_line *d1 = gpiod_chip_get_line(chip, (unsigned)d1o);
    if (d0 == NULL || d1 == NULL) return fail("getting line", "D0/D1");
    struct gpiod_line_bulk pair;
    gpiod_line_bulk_init(&pair);
    gpiod_line_bulk_add(&pair, d0);
    gpiod_line_bulk_add(&pair, d1);
    int idle[2] = {1, 1};
    if (gpiod_line_request_bulk_output(&pair, consumer, idle) != 0) return fail("requesting as outputs", "D0/D1");
    int status = 0;
    long long t = at ? first_ns : now_ns();
    for (int f = bits_from; f < argc && status == 0 && !stopping; f++) {
        if (at) {
            t = first_ns + (long long)(f - bits_from) * period_ms * 1000000LL;
            long long n = now_ns();
            if (t < n) t = n;
        } else if (f > bits_from) {
            t += gap_ms * 1000000LL;
        }
        sleep_until(t - 2000000LL, 1);   /* wake a little early, then spin to the first edge */
        if (stopping) break;
        spin_until(t);
        for (const char *b = argv[f]; *b && status == 0; b++) {
            spin_until(t);
            /* A pulse runs `pulse` from the clock reading just before the call that starts it, and
             * never ends sooner than 20 us after that call returns (the call may have been held up
             * after the edge): the rule a sender needs so that no pulse is shorter than SIA's 20 us. */
            long long start = now_ns();
            status = *b == '1' ? set_pair(&pair, 1, 0) : set_pair(&pair, 0, 1);
            long long returned = now_ns();
            long long end = start + pulse_us * 1000LL;
            spin_until(end > returned + 20000LL ? end : returned + 20000LL);
            if (status == 0) status = set_pair(&pair, 1, 1);
            t = start + interval_us * 1000LL;
        }
        t = now_ns();
    }
    set_pair(&pair, 1, 1);
    gpiod_line_release_bulk(&pair);
    return status;
}

static int pulses(struct gpiod_chip *chip, int argc, char **argv) {
    long offset, on_ms, off_ms, count;
    if (argc != 4 || number(argv[0], 0, 1023, &offset) || number(argv[1], 1, 60000, &on_ms) ||
        number(argv[2], 1, 60000, &off_ms) || number(argv[3], 1, 100000, &count))
        return usage();
    struct gpiod_line *line = output(chip, offset, 0, "LINE");
    if (line == NULL) return 1;
    int status = 0;
    long long t = now_ns() + off_ms * 1000000LL;
    for (long i = 0; i < count && status == 0 && !stopping; i++) {
        sleep_until(t, 0);
        status = set(line, 1, "LINE");
        t += on_ms * 1000000LL;
        sleep_until(t, 0);
        if (status == 0) status = set(line, 0, "LINE");
        t += off_ms * 1000000LL;
    }
    gpiod_line_set_value(line, 0);
    gpiod_line_release(line);
    return status;
}

int main(int argc, char **argv) {
    if (argc < 3) return usage();
    struct sigaction term = {.sa_handler = on_term};
    sigemptyset(&term.sa_mask);
    if (sigaction(SIGTERM, &term, NULL) != 0) return fail("sigaction", "SIGTERM");
    struct gpiod_chip *chip = gpiod_chip_open_lookup(argv[2]);
    if (chip == NULL) return fail("opening chip", argv[2]);
    int status;
    if (strcmp(argv[1], "wiegand") == 0)
        status = wiegand(chip, argc - 3, argv + 3, 0);
    else if (strcmp(argv[1], "wiegand-at") == 0)
        status = wiegand(chip, argc - 3, argv + 3, 1);
    else if (strcmp(argv[1], "pulses") == 0)
        status = pulses(chip, argc - 3, argv + 3);
    else
        status = usage();
    gpiod_chip_close(chip);
    return status;
}
