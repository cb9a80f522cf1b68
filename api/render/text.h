/*
 * api/render/text.h — matrices and tables as aligned plain text, for terminals.
 *
 * The building blocks of every text/plain rendering (attention, multi-head, the
 * shape table): they take numbers and labels, never an endpoint's structs, so each
 * endpoint lays out its own page from the same pieces.
 *
 * Alignment counts display columns, not bytes: labels are UTF-8, East Asian wide
 * characters (사과, 注意) take two columns, combining marks none. Labels are
 * shown visibly before they are echoed and cut to API_TEXT_MAX_LABEL columns with
 * an ellipsis, so no label can break or reorder the layout: a control or format
 * character (C0, DEL, C1, Unicode's Cf such as the bidi controls U+202A..U+202E and
 * U+2066..U+2069, U+200B..U+200F, U+FEFF, U+00AD; and U+2028, U+2029) is written as
 * its escape "<U+202E>", which takes as many columns as it has characters and is
 * never cut in half; bytes that are not UTF-8 become '?'.
 * A matrix wider than its line budget keeps its first and last columns around a
 * "..." column, and a tall one its first and last rows, as numpy summarizes.
 *
 * Not here: I/O, JSON, HTTP. Everything is appended to a struct api_buf.
 */
#ifndef API_RENDER_TEXT_H
#define API_RENDER_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "api/json/buf.h"

#define API_TEXT_MAX_LABEL 16  /* display columns kept of one label */
#define API_TEXT_EDGE 3        /* rows or columns kept on each side of an ellipsis */
#define API_TEXT_MAX_ROWS 20   /* more rows than this are elided */
#define API_TEXT_WIDTH 100     /* the default line budget, in display columns */

/* The names along one axis: names[i] when given (and not NULL), else prefix + i ("q0"). */
struct api_labels {
    const char *const *names; /* n UTF-8 strings, or NULL; borrowed */
    size_t n;
    const char *prefix;       /* e.g. "q", "k"; "" gives bare indices */
};

/* One matrix to print. Every pointer is borrowed. */
struct api_text_matrix {
    const double *data;       /* (rows, cols), element (i, j) at data[i * stride + j] */
    size_t rows, cols, stride;
    struct api_labels row_labels, col_labels;
    const double *extra;      /* (rows) values shown after a bar, e.g. row sums; or NULL */
    const char *extra_label;  /* that column's header, e.g. "sum" */
    int decimals;             /* digits after the point, 0..15 */
    size_t max_width;         /* line budget in display columns; 0 means API_TEXT_WIDTH */
    const char *indent;       /* written before every line; NULL for none */
};

/*
 * Appends the matrix: a header line of column labels, then one line per row,
 * each ending in '\n'. Cells are right-aligned; -inf prints as "-inf".
 */
void api_text_matrix(struct api_buf *b, const struct api_text_matrix *m);

/*
 * At most the bytes api_text_matrix appends for a (rows, cols) matrix, whatever its
 * numbers, labels, decimals and extra column: at most API_TEXT_MAX_ROWS rows (or
 * 2·API_TEXT_EDGE and an ellipsis) under a header, and a line of at most the columns
 * that fit API_TEXT_WIDTH (each at least 3) or 2·API_TEXT_EDGE around an ellipsis,
 * each cell at most a label's or a number's bytes and its padding. For admission,
 * which must know a page's size before it is written.
 */
size_t api_text_matrix_bytes(size_t rows, size_t cols);

/*
 * A block map as a grid of characters, one a tile (DESIGN.md, "Masks of today's
 * training, and the block map"), as FlexAttention's BlockMask prints itself. A line a tile
 * row, named as its first query is (row_labels at r * row_step); the tiles follow two
 * spaces after the widest name. Elided as a matrix is: more than API_TEXT_MAX_ROWS tile
 * rows keep their first and last API_TEXT_EDGE around a "..." line, and a line wider than
 * its budget keeps as many tiles each side of " ... " as fit. Every pointer is borrowed.
 */
struct api_text_tiles {
    const unsigned char *tiles; /* (rows, cols): 0 empty, 1 partial, 2 full */
    size_t rows, cols;
    struct api_labels row_labels;
    size_t row_step;            /* queries a tile row spans (B_q) */
    const char *glyphs[3];      /* one character (at most 4 bytes, one column) per kind */
    size_t max_width;           /* line budget in display columns; 0 means API_TEXT_WIDTH */
    const char *indent;         /* written before every line; NULL for none */
};

void api_text_tiles(struct api_buf *b, const struct api_text_tiles *t);

/* At most the bytes api_text_tiles appends for (rows, cols) tiles, for admission. */
size_t api_text_tiles_bytes(size_t rows, size_t cols);

/* A table of strings: a header and rows x cols cells (row-major). Borrowed. */
struct api_text_table {
    const char *const *header; /* cols strings */
    const char *const *cells;  /* rows * cols strings; NULL cells print empty */
    size_t rows, cols;
    const char *align;         /* cols chars, 'l' or 'r'; NULL: all left */
    const char *indent;        /* written before every line; NULL for none */
};

/* Appends the table, columns two spaces apart, padded by display width. */
void api_text_table(struct api_buf *b, const struct api_text_table *t);

/*
 * Display columns of a UTF-8 string as these renderers show it: wide characters 2,
 * combining marks 0, a control or format character the length of its escape.
 */
size_t api_text_width(const char *s);

/*
 * One character of a client's string as it is shown: the character itself, its
 * escape "<U+XXXX>" (4 to 6 hex digits) when it is a control or format character,
 * or "?" for a byte that does not start a well-formed UTF-8 sequence. The SVG
 * renderer writes its texts through this too, so both renderings show the same.
 */
#define API_TEXT_ESCAPE 12 /* "<U+10FFFF>" and its NUL */
struct api_text_char {
    char bytes[API_TEXT_ESCAPE]; /* what is written, NUL-terminated */
    size_t len;                  /* strlen(bytes) */
    size_t cols;                 /* the display columns it takes */
};

/* Reads the character at s (not at its terminating NUL); returns the bytes consumed. */
size_t api_text_char_next(const char *s, struct api_text_char *out);

/*
 * x with `decimals` digits after the point, rounded as numpy.round does; "-inf",
 * "inf" and "nan" for the non-finite; exponent notation from 1e12 up so a huge
 * number cannot take a whole line. buf holds at least API_TEXT_NUMBER bytes.
 */
#define API_TEXT_NUMBER 48
void api_text_number(char *buf, double x, int decimals);

/* "(2, 4)", or "(3,)" when as_vector (numpy's way of writing a 1-d shape). */
#define API_TEXT_SHAPE 48
void api_text_shape(char *buf, size_t rows, size_t cols, bool as_vector);

/* The label of index i on an axis, shown visibly and cut; buf holds API_TEXT_LABEL bytes. */
#define API_TEXT_LABEL 96
void api_text_label(char *buf, const struct api_labels *l, size_t i);

/*
 * `rows`: *out becomes labels for the answer's rows, row i named as query rows[i] is in
 * `from` (its name, or prefix<index>). The names live in *store (n·API_TEXT_LABEL bytes)
 * and *names; the caller frees both, also when false (no memory) leaves them NULL.
 */
bool api_labels_pick(const struct api_labels *from, const size_t *rows, size_t n,
                     struct api_labels *out, const char ***names, char **store);

#endif
