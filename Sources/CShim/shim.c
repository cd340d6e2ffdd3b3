#define _GNU_SOURCE
#include "CShim.h"

#include <pthread.h>

#include <errno.h>
#include <pty.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/serial.h>
#include <linux/videodev2.h>
#include <libv4l2.h>
#include <alsa/asoundlib.h>

void shim_set_current_thread_name(const char *name) {
    char buffer[16];
    strncpy(buffer, name, 15);
    buffer[15] = '\0';
    pthread_setname_np(pthread_self(), buffer);
}

int shim_stdout_line_buffered(void) { return setvbuf(stdout, NULL, _IOLBF, 0) == 0 ? 0 : -1; }

int shim_openpty(int *controller, int *device, char *name, size_t name_len) {
    char buffer[128];
    if (openpty(controller, device, buffer, NULL, NULL) != 0) return -1;
    if (name && name_len > 0) {
        strncpy(name, buffer, name_len - 1);
        name[name_len - 1] = '\0';
    }
    return 0;
}

unsigned long shim_tiocgrs485(void) { return TIOCGRS485; }
unsigned long shim_tiocsrs485(void) { return TIOCSRS485; }
unsigned long shim_tiocmget(void) { return TIOCMGET; }
unsigned long shim_tiocoutq(void) { return TIOCOUTQ; }
unsigned long shim_tiocgexcl(void) { return TIOCGEXCL; }
int shim_ioctl_int(int fd, unsigned long request, int *value) { return ioctl(fd, request, value); }

int shim_enable_rs485(int fd, int rts_on_send) {
    struct serial_rs485 conf;
    memset(&conf, 0, sizeof conf);
    conf.flags = SER_RS485_ENABLED | (rts_on_send ? SER_RS485_RTS_ON_SEND : SER_RS485_RTS_AFTER_SEND);
    return ioctl(fd, TIOCSRS485, &conf);
}

unsigned long shim_vidioc_querycap(void) { return VIDIOC_QUERYCAP; }
unsigned long shim_vidioc_enum_fmt(void) { return VIDIOC_ENUM_FMT; }
unsigned long shim_vidioc_enum_framesizes(void) { return VIDIOC_ENUM_FRAMESIZES; }
unsigned long shim_vidioc_enum_frameintervals(void) { return VIDIOC_ENUM_FRAMEINTERVALS; }
unsigned long shim_vidioc_g_fmt(void) { return VIDIOC_G_FMT; }
unsigned long shim_vidioc_s_fmt(void) { return VIDIOC_S_FMT; }
unsigned long shim_vidioc_g_parm(void) { return VIDIOC_G_PARM; }
unsigned long shim_vidioc_s_parm(void) { return VIDIOC_S_PARM; }
unsigned long shim_vidioc_reqbufs(void) { return VIDIOC_REQBUFS; }
unsigned long shim_vidioc_querybuf(void) { return VIDIOC_QUERYBUF; }
unsigned long shim_vidioc_qbuf(void) { return VIDIOC_QBUF; }
unsigned long shim_vidioc_dqbuf(void) { return VIDIOC_DQBUF; }
unsigned long shim_vidioc_streamon(void) { return VIDIOC_STREAMON; }
unsigned long shim_vidioc_streamoff(void) { return VIDIOC_STREAMOFF; }
unsigned long shim_vidioc_queryctrl(void) { return VIDIOC_QUERYCTRL; }
unsigned long shim_vidioc_g_ctrl(void) { return VIDIOC_G_CTRL; }
unsigned long shim_vidioc_s_ctrl(void) { return VIDIOC_S_CTRL; }
uint32_t shim_fourcc(char a, char b, char c, char d) { return v4l2_fourcc(a, b, c, d); }
int shim_v4l2_open(const char *path, int flags) { return v4l2_open(path, flags); }
int shim_v4l2_close(int fd) { return v4l2_close(fd); }
int shim_v4l2_ioctl(int fd, unsigned long request, void *arg) { return v4l2_ioctl(fd, request, arg); }
void *shim_v4l2_mmap(void *start, size_t length, int prot, int flags, int fd, int64_t offset) {
    return v4l2_mmap(start, length, prot, flags, fd, offset);
}
int shim_v4l2_munmap(void *start, size_t length) { return v4l2_munmap(start, length); }
int shim_ioctl(int fd, unsigned long request, void *arg) { return ioctl(fd, request, arg); }

static void silent_alsa_handler(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}
void shim_alsa_silence_errors(void) { snd_lib_error_set_handler(silent_alsa_handler); }

#include <sys/timex.h>
int shim_adjtimex_read(long *maxerror, long *esterror, int *status) {
    struct timex t;
    memset(&t, 0, sizeof t);
    int state = adjtimex(&t);
    if (state < 0) return -1;
    *maxerror = t.maxerror;
    *esterror = t.esterror;
    *status = t.status;
    return state;
}

#include <malloc.h>
int shim_malloc_trim_threshold(int bytes) { return mallopt(M_TRIM_THRESHOLD, bytes); }
int shim_malloc_mmap_threshold(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }
