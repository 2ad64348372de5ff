/* A strict JSON parser for the suites (RFC 8259: objects, arrays, strings
 * with escapes, numbers, true/false/null; anything else is refused), so that
 * a --json output is checked as a document, not by substrings. */
#ifndef PT_TEST_JSON_H
#define PT_TEST_JSON_H

#include <stddef.h>

enum pt_json_type { PT_JSON_NULL, PT_JSON_BOOL, PT_JSON_NUM, PT_JSON_STR, PT_JSON_ARR, PT_JSON_OBJ };

struct pt_json {
  enum pt_json_type type;
  double num;     /* NUM, BOOL (0/1) */
  char *str;      /* STR; the key in an object's member */
  char *key;      /* set on an object's members */
  struct pt_json *kid; /* ARR, OBJ: first element */
  struct pt_json *next;
  size_t n; /* ARR, OBJ: element count */
};

/* The document, or NULL with *err naming the byte offset and what is wrong. */
struct pt_json *pt_json_parse(const char *text, char *err, size_t errlen);
void pt_json_free(struct pt_json *j);
/* A path of keys and indices, "jobs.0.communicators.1.verdict"; NULL when
 * absent. */
const struct pt_json *pt_json_at(const struct pt_json *j, const char *path);

#endif
