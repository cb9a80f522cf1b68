/*
 * server/codec/inflate_problem.c — a coded body that could not be undone, in words (see
 * inflate_problem.h). Each fault is its own sentence so that every language has the
 * whole of it; zlib's own words (SRV_INFLATE_DAMAGED) are quoted as zlib says them.
 */
#include "server/codec/inflate_problem.h"

/* "deflate (zlib format)": what RFC 9110 calls deflate is zlib's wrapper, not raw deflate. */
static const char *srv_inflate_form(enum srv_coding coding)
{
    return coding == SRV_CODING_DEFLATE ? "deflate (zlib format)" : srv_coding_name(coding);
}

void srv_inflate_respond(const struct srv_inflate *f, const struct api_request *req,
                         struct api_response *res)
{
    const char *name = srv_coding_name(f->coding);
    const char *form = srv_inflate_form(f->coding);
    switch (f->fault) {
    case SRV_INFLATE_TRAILING:
        api_respond_server_problem(res, req, API_INVALID_JSON, "the body is not valid %s "
                                   "(Content-Encoding: %s): there are bytes after the end of "
                                   "the stream, after %llu bytes of it", form, name, f->in);
        return;
    case SRV_INFLATE_DICTIONARY:
        api_respond_server_problem(res, req, API_INVALID_JSON, "the body is not valid %s "
                                   "(Content-Encoding: %s): it asks for a preset dictionary, "
                                   "after %llu bytes of it", form, name, f->in);
        return;
    case SRV_INFLATE_CUT_SHORT:
        api_respond_server_problem(res, req, API_INVALID_JSON, "the %s body (Content-Encoding: "
                                   "%s) ends before its stream does, after %llu bytes: it was "
                                   "cut short, or is not %s at all", name, name, f->in, name);
        return;
    case SRV_INFLATE_DAMAGED:
    case SRV_INFLATE_FINE: /* not reached: only a refused body is answered here */
        break;
    }
    if (f->zlib_said != NULL)
        api_respond_server_problem(res, req, API_INVALID_JSON, "the body is not valid %s "
                                   "(Content-Encoding: %s): %s, after %llu bytes of it", form,
                                   name, f->zlib_said, f->in);
    else
        api_respond_server_problem(res, req, API_INVALID_JSON, "the body is not valid %s "
                                   "(Content-Encoding: %s): the stream is damaged, after %llu "
                                   "bytes of it", form, name, f->in);
}
