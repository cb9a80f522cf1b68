/*
 * api/json/spare_threads.c — see spare_threads.h.
 */
#include "api/json/spare_threads.h"

#include <stdatomic.h>

static atomic_uint lendable = 1;
static atomic_uint in_flight;

void api_spare_threads_set(unsigned threads)
{
    atomic_store(&lendable, threads > 0 ? threads : 1);
}

void api_spare_threads_request_begin(void)
{
    atomic_fetch_add(&in_flight, 1);
}

void api_spare_threads_request_end(void)
{
    atomic_fetch_sub(&in_flight, 1);
}

unsigned api_spare_threads(void)
{
    return atomic_load(&in_flight) <= 1 ? atomic_load(&lendable) : 1;
}

unsigned api_spare_threads_for(size_t cells)
{
    return cells < API_SPARE_MIN_CELLS ? 1 : api_spare_threads();
}

unsigned api_spare_threads_most_for(size_t cells)
{
    return cells < API_SPARE_MIN_CELLS ? 1 : atomic_load(&lendable);
}
