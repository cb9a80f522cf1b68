/*
 * api/numparse.cc — a shim over fast_float (see numparse.h). Built like numfmt.cc:
 * C++17, -fno-exceptions -fno-rtti; nothing here allocates.
 */
#include "api/numparse.h"

#include <system_error>

#include <fast_float/fast_float.h>

extern "C" bool api_parse_double(const char *first, const char *last, double *out)
{
    double value = 0;
    fast_float::from_chars_result r = fast_float::from_chars(first, last, value);
    /* fast_float 3.x reports no error for overflow (it rounds to infinity, as strtod
     * does); later versions say result_out_of_range with the same value. Both are a
     * number read; the caller decides what an infinity means. */
    if (r.ptr != last || (r.ec != std::errc() && r.ec != std::errc::result_out_of_range))
        return false;
    *out = value;
    return true;
}
