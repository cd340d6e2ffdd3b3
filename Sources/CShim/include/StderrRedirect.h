// stdio's `stderr` routed through a handler: C libraries (libzbar's zassert) print there with fprintf.
#ifndef SCANGATE_STDERR_REDIRECT_H
#define SCANGATE_STDERR_REDIRECT_H

#include <stddef.h>

/// Called once per write to stdio's stderr with the bytes written (one fprintf call gives one call,
/// up to glibc's 8 KB helper buffer), with the stream locked (so calls never overlap).
typedef void (*shim_stderr_handler)(void *context, const char *bytes, size_t count);

/// Replaces glibc's `stderr` (an assignable variable, as the glibc manual documents for the standard
/// streams) with an unbuffered fopencookie stream that hands every write to `handler`. The original
/// stream on fd 2 is left open and unchanged. Only stdio is affected: write(2) on fd 2 (ScanGate's
/// logger, the Swift runtime's crash report) goes straight to fd 2 as before. Returns 0, or -1 with errno.
int shim_stderr_redirect(shim_stderr_handler handler, void *context);

/// fputs(text, stderr) and fflush: what a C library printing a diagnostic does (for tests).
int shim_stderr_print(const char *text);

#endif
