// What Swift cannot import directly: function-like macros (VIDIOC_*, V4L2_PIX_FMT_*, zbar_fourcc),
// variadic C functions (v4l2_open, v4l2_ioctl, ALSA's error handler), and C-only stdio globals.
#ifndef SCANGATE_CSHIM_H
#define SCANGATE_CSHIM_H

#include <stddef.h>
#include <stdint.h>
#include <termios.h>

// ---- stdio ----
/// Line-buffers stdout so each event line reaches a pipe at once. Returns 0 or -1.
int shim_stdout_line_buffered(void);

// ---- threads ----
/// Names the calling thread (shown by top -H, gdb); at most 15 characters are kept.
void shim_set_current_thread_name(const char *name);

// ---- pseudo-terminals ----
/// openpty(3): returns 0 and both fds, or -1 with errno set.
int shim_openpty(int *controller, int *device, char *name, size_t name_len);

// ---- serial ----
unsigned long shim_tiocgrs485(void);
unsigned long shim_tiocsrs485(void);
/// Enables RS-485 mode (SER_RS485_ENABLED | RTS_ON_SEND) on a UART. Returns ioctl's result.
int shim_enable_rs485(int fd, int rts_on_send);
int shim_ioctl_int(int fd, unsigned long request, int *value);
unsigned long shim_tiocmget(void);
/// TIOCOUTQ: bytes in a tty's output queue, not yet transmitted.
unsigned long shim_tiocoutq(void);
/// TIOCGEXCL: whether a tty is in exclusive mode (TIOCEXCL) now; Linux 3.8 and later.
unsigned long shim_tiocgexcl(void);

// ---- V4L2 ----
unsigned long shim_vidioc_querycap(void);
unsigned long shim_vidioc_enum_fmt(void);
unsigned long shim_vidioc_enum_framesizes(void);
unsigned long shim_vidioc_enum_frameintervals(void);
unsigned long shim_vidioc_g_fmt(void);
unsigned long shim_vidioc_s_fmt(void);
unsigned long shim_vidioc_g_parm(void);
unsigned long shim_vidioc_s_parm(void);
unsigned long shim_vidioc_reqbufs(void);
unsigned long shim_vidioc_querybuf(void);
unsigned long shim_vidioc_qbuf(void);
unsigned long shim_vidioc_dqbuf(void);
unsigned long shim_vidioc_streamon(void);
unsigned long shim_vidioc_streamoff(void);
unsigned long shim_vidioc_queryctrl(void);
unsigned long shim_vidioc_g_ctrl(void);
unsigned long shim_vidioc_s_ctrl(void);
uint32_t shim_fourcc(char a, char b, char c, char d);
int shim_v4l2_open(const char *path, int flags);
int shim_v4l2_close(int fd);
int shim_v4l2_ioctl(int fd, unsigned long request, void *arg);
void *shim_v4l2_mmap(void *start, size_t length, int prot, int flags, int fd, int64_t offset);
int shim_v4l2_munmap(void *start, size_t length);
/// ioctl(2) through libc (variadic, so not importable): the call an LD_PRELOAD shim such as libcamera's
/// v4l2-compat.so intercepts, unlike libv4l2's raw syscalls.
int shim_ioctl(int fd, unsigned long request, void *arg);

// ---- ALSA ----
/// Installs an error handler that prints nothing (ALSA would print to stderr when there is no card).
void shim_alsa_silence_errors(void);

// ---- clock discipline (signed passes: credential-require-synced-clock) ----
/// adjtimex(2) in read-only mode (modes = 0): the kernel's maximum and estimated error in microseconds
/// and its status bits (STA_UNSYNC = 0x40). Returns the clock state (TIME_OK 0 ... TIME_ERROR 5), or -1
/// with errno set.
int shim_adjtimex_read(long *maxerror, long *esterror, int *status);

// ---- the allocator (Wiegand's real-time transmitter) ----
/// mallopt(M_TRIM_THRESHOLD, bytes) and mallopt(M_MMAP_THRESHOLD, bytes) (malloc.h's constants are
/// macros of a header Swift's Glibc module does not include). Each returns mallopt's 1 (done) or 0.
int shim_malloc_trim_threshold(int bytes);
int shim_malloc_mmap_threshold(int bytes);

#endif

#include "StderrRedirect.h"
