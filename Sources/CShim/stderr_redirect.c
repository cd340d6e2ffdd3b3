#define _GNU_SOURCE
#include "StderrRedirect.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

struct stderr_route {
    shim_stderr_handler handler;
    void *context;
};

static ssize_t route_write(void *cookie, const char *bytes, size_t count) {
    struct stderr_route *route = cookie;
    if (count > 0) route->handler(route->context, bytes, count);
    return (ssize_t)count;
}

// The installed route, which lives as long as the process (the stream may be written until exit). Held
// here too, so that LeakSanitizer (the fuzz targets) sees it reachable: glibc's FILE does not keep the
// cookie where LSan looks.
static struct stderr_route *installed_route;

int shim_stderr_redirect(shim_stderr_handler handler, void *context) {
    if (!handler) { errno = EINVAL; return -1; }
    struct stderr_route *route = malloc(sizeof *route);
    if (!route) return -1;
    route->handler = handler;
    route->context = context;
    cookie_io_functions_t functions = { .read = NULL, .write = route_write, .seek = NULL, .close = NULL };
    FILE *stream = fopencookie(route, "w", functions);
    if (!stream) { free(route); return -1; }
    if (setvbuf(stream, NULL, _IONBF, 0) != 0) {
        fclose(stream);
        free(route);
        errno = EIO;
        return -1;
    }
    fflush(stderr);
    stderr = stream;
    installed_route = route;
    return 0;
}

int shim_stderr_print(const char *text) {
    if (fputs(text, stderr) < 0) return -1;
    return fflush(stderr) == 0 ? 0 : -1;
}
