/*
 * api/endpoints/version.h — attnd's version and build, for /version, --version and metrics.
 *
 * The Makefile writes them into build/gen/version.c, rewriting that file only when
 * the text changes, so a new commit relinks with the new build id without
 * rebuilding everything, and an unchanged tree rebuilds nothing.
 */
#ifndef API_VERSION_H
#define API_VERSION_H

extern const char attnd_version[]; /* e.g. "0.1.0" */
extern const char attnd_build[];   /* `git describe --always --dirty`, or "unknown" */

#endif
