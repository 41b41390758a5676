/* exit_release.c with the library's log output on (UR_LOG=trace, to
 * stderr): every call then makes spans and events, whose registry and
 * output buffer are thread-locals of the calling thread; at exit they are
 * gone, and a call from the destructor aborted the process on every
 * library.
 *
 * urt: also without layers */
#define _POSIX_C_SOURCE 200809L
#define EXIT_RELEASE_LOG "trace"
#include "exit_release.c"
