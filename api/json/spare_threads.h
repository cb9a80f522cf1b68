/*
 * api/json/spare_threads.h — which of the server's workers one request may borrow.
 *
 * The server runs one request per worker, so under load every core is taken and a
 * request runs on its own thread. When a request is the only one in progress, though,
 * the other workers' cores are idle, and its large stages may use them: reading the
 * body in halves (api/json/read.h), the forward pass in row blocks (core's
 * attn_forward_threads), writing matrices in pieces (api/json/matrix_write.h). Each stage
 * applies its own size threshold; this decides only whether threads are free.
 *
 * Not here: the threads themselves (each stage starts and joins its own).
 */
#ifndef API_SPARE_THREADS_H
#define API_SPARE_THREADS_H

#include <stddef.h>

/* Work over fewer cells (a matrix to write, a forward pass's n_q × n_k) stays on the
 * request's thread: a thread's start would cost more than it saves. */
#define API_SPARE_MIN_CELLS 32768

/* How many threads a request alone may use (the server's worker count; 1, the
 * default, lends nothing). Set once, before serving. */
void api_spare_threads_set(unsigned threads);

/* The caller's bracket around each request (the server's: api_request_began, from
 * its headers until its answer is sent). Threads are lent only while at most one
 * request is in progress; with nothing bracketed, a request is alone. Counting only
 * the requests inside api_handle lent the core of a worker that was receiving or
 * sending: medium's body at 8 connections on 2 cores was then read in halves beside
 * it. Counting whole requests, the server answers more requests a second there
 * (docs/performance.md). */
void api_spare_threads_request_begin(void);
void api_spare_threads_request_end(void);

/* The threads the current request may use now: the count set above while at most one
 * request is in progress, else 1. */
unsigned api_spare_threads(void);

/* The same for work over `cells` cells: 1 below API_SPARE_MIN_CELLS. */
unsigned api_spare_threads_for(size_t cells);

/* The most api_spare_threads_for(cells) can give, whatever is in progress: for an
 * estimate made before the run (admission), which must hold when more threads are free
 * by the time the work starts. */
unsigned api_spare_threads_most_for(size_t cells);

#endif
