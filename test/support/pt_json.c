#include "pt_json.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
  const char *s;
  size_t at;
  int bad;
  char *err;
  size_t errlen;
};

static void fail(struct parser *p, const char *what) {
  if (!p->bad) snprintf(p->err, p->errlen, "byte %zu: %s", p->at, what);
  p->bad = 1;
}

static void ws(struct parser *p) {
  while (p->s[p->at] == ' ' || p->s[p->at] == '\t' || p->s[p->at] == '\n' || p->s[p->at] == '\r')
    p->at++;
}

static struct pt_json *node(enum pt_json_type t) {
  struct pt_json *j = calloc(1, sizeof *j);
  if (j) j->type = t;
  return j;
}

static char *string(struct parser *p) {
  size_t cap = 16, n = 0;
  char *out = malloc(cap);
  p->at++; /* the quote */
  for (;;) {
    unsigned char c = (unsigned char)p->s[p->at];
    if (!c || c < 0x20) {
      fail(p, "unterminated string or raw control character");
      break;
    }
    p->at++;
    if (c == '"') break;
    if (c == '\\') {
      char e = p->s[p->at++];
      if (e == 'u') {
        for (int k = 0; k < 4; k++)
          if (!isxdigit((unsigned char)p->s[p->at + k])) fail(p, "bad \\u escape");
        if (p->bad) break;
        c = (unsigned char)strtol((char[]){p->s[p->at + 2], p->s[p->at + 3], 0}, NULL, 16);
        p->at += 4;
      } else {
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t", *f = strchr(from, e);
        if (!e || !f) {
          fail(p, "bad escape");
          break;
        }
        c = (unsigned char)to[f - from];
      }
    }
    if (n + 2 > cap) out = realloc(out, cap *= 2);
    out[n++] = (char)c;
  }
  out[n] = 0;
  return out;
}

static struct pt_json *value(struct parser *p, int depth);

static struct pt_json *list(struct parser *p, int depth, int obj) {
  struct pt_json *j = node(obj ? PT_JSON_OBJ : PT_JSON_ARR), **tail = &j->kid;
  p->at++;
  ws(p);
  if (p->s[p->at] == (obj ? '}' : ']')) {
    p->at++;
    return j;
  }
  for (;;) {
    char *key = NULL;
    ws(p);
    if (obj) {
      if (p->s[p->at] != '"') {
        fail(p, "object key is not a string");
        break;
      }
      key = string(p);
      ws(p);
      if (p->s[p->at++] != ':') {
        fail(p, "':' expected");
        free(key);
        break;
      }
    }
    struct pt_json *v = value(p, depth + 1);
    if (!v) {
      free(key);
      break;
    }
    v->key = key;
    *tail = v;
    tail = &v->next;
    j->n++;
    ws(p);
    char c = p->s[p->at++];
    if (c == (obj ? '}' : ']')) return j;
    if (c != ',') {
      fail(p, "',' or the closing bracket expected");
      break;
    }
  }
  return j;
}

static struct pt_json *value(struct parser *p, int depth) {
  ws(p);
  const char *s = p->s + p->at;
  if (depth > 64) return fail(p, "nested too deep"), NULL;
  if (*s == '{' || *s == '[') return list(p, depth, *s == '{');
  if (*s == '"') {
    struct pt_json *j = node(PT_JSON_STR);
    j->str = string(p);
    return j;
  }
  static const char *const words[] = {"true", "false", "null"};
  for (int w = 0; w < 3; w++)
    if (!strncmp(s, words[w], strlen(words[w]))) {
      struct pt_json *j = node(w == 2 ? PT_JSON_NULL : PT_JSON_BOOL);
      j->num = w == 0;
      p->at += strlen(words[w]);
      return j;
    }
  if (*s == '-' || isdigit((unsigned char)*s)) {
    char *end;
    struct pt_json *j = node(PT_JSON_NUM);
    j->num = strtod(s, &end);
    p->at += (size_t)(end - s);
    return j;
  }
  fail(p, "a value expected");
  return NULL;
}

struct pt_json *pt_json_parse(const char *text, char *err, size_t errlen) {
  struct parser p = {text, 0, 0, err, errlen};
  struct pt_json *j = value(&p, 0);
  ws(&p);
  if (!p.bad && text[p.at]) fail(&p, "trailing bytes after the document");
  if (p.bad) {
    pt_json_free(j);
    return NULL;
  }
  return j;
}

void pt_json_free(struct pt_json *j) {
  while (j) {
    struct pt_json *next = j->next;
    pt_json_free(j->kid);
    free(j->str);
    free(j->key);
    free(j);
    j = next;
  }
}

const struct pt_json *pt_json_at(const struct pt_json *j, const char *path) {
  char part[128];
  while (j && *path) {
    size_t n = strcspn(path, ".");
    snprintf(part, sizeof part, "%.*s", (int)n, path);
    path += n + (path[n] == '.');
    const struct pt_json *k = j->kid;
    if (j->type == PT_JSON_ARR) {
      for (long i = strtol(part, NULL, 10); k && i > 0; i--) k = k->next;
    } else if (j->type == PT_JSON_OBJ) {
      while (k && strcmp(k->key, part)) k = k->next;
    } else {
      k = NULL;
    }
    j = k;
  }
  return j;
}
