/*
 * Setting of one log (see import_setting.h): --setting parsing and its
 * reconciliation with the NCCL_* values found in the log. A partial
 * setting is refused rather than completed with a guess, since a profile
 * candidate that names the wrong algorithm or channel count would steer the
 * plugin to a combination that was never measured.
 */
#include "import_setting.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "import_lex.h"
#include "pcie/table.h"

__attribute__((format(printf, 4, 5))) static int fail(struct pt_error_rec *e, const char *file,
                                                      int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pt_error_vset(e, PT_EINVAL, file, line, fmt, ap);
  va_end(ap);
  return PT_EINVAL;
}

static int parse_name(int key, const char *val) {
  return key == 0 ? pt_algo_parse(val) : pt_proto_parse(val);
}

int imp_setting_parse(const char *spec, struct imp_setting *out, char *msg, size_t len) {
  static const char *const keys[3] = {"algo", "proto", "channels"};
  int *field[3] = {&out->algo, &out->proto, &out->channels};
  char buf[256];
  *out = IMP_SETTING_NONE;
  if (!*spec) return snprintf(msg, len, "empty setting"), -1;
  if (snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf)
    return snprintf(msg, len, "setting too long"), -1;
  char *save = NULL;
  for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(item, '=');
    int k = -1;
    if (!eq) return snprintf(msg, len, "expected key=value ('%s')", item), -1;
    *eq = '\0';
    for (int i = 0; i < 3; i++)
      if (!strcmp(item, keys[i])) k = i;
    if (k < 0) return snprintf(msg, len, "unknown key '%s' (expected algo, proto or channels)", item), -1;
    if (*field[k] >= 0) return snprintf(msg, len, "'%s' given twice", item), -1;
    const char *val = eq + 1;
    if (k == 2) {
      if (lx_int((struct lx_span){val, strlen(val)}, 1, PT_MAX_CHANNELS, field[k]))
        return snprintf(msg, len, "channels must be 1..%d ('%s')", PT_MAX_CHANNELS, val), -1;
    } else if ((*field[k] = parse_name(k, val)) < 0) {
      return snprintf(msg, len, "unknown %s '%s' (expected %s)", k == 0 ? "algorithm" : "protocol", val,
                      k == 0 ? "tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree or pat"
                             : "ll, ll128 or simple"),
             -1;
    }
  }
  if (out->algo < 0 && out->proto < 0 && out->channels < 0)
    return snprintf(msg, len, "empty setting"), -1;
  return 0;
}

/* One NCCL_* value of the log as a number (-1 when absent). */
static int env_value(const struct nt_log *log, int var, int *out, struct pt_error_rec *err) {
  const struct nt_env *e = &log->env[var];
  *out = -1;
  if (!e->line) return 0;
  if (var == NT_ENV_ALGO || var == NT_ENV_PROTO) {
    *out = var == NT_ENV_ALGO ? pt_algo_parse(e->value) : pt_proto_parse(e->value);
    if (*out < 0)
      return fail(err, log->name, e->line, "%s '%s' is not one %s (a setting is one candidate)",
                  nt_env_name(var), e->value, var == NT_ENV_ALGO ? "algorithm" : "protocol");
    return 0;
  }
  if (lx_int((struct lx_span){e->value, strlen(e->value)}, 1, PT_MAX_CHANNELS, out))
    return fail(err, log->name, e->line, "%s '%s' is not a channel count 1..%d", nt_env_name(var),
                e->value, PT_MAX_CHANNELS);
  return 0;
}

static int check_agree(const struct nt_log *log, int var, int cli, int env, struct pt_error_rec *err) {
  if (cli < 0 || env < 0 || cli == env) return 0;
  return fail(err, log->name, log->env[var].line, "--setting says %s but the log sets %s=%s",
              var == NT_ENV_ALGO ? pt_algo_name(cli) : pt_proto_name(cli), nt_env_name(var),
              log->env[var].value);
}

static int resolve_channels(const struct nt_log *log, int cli, int min, int max, int *out,
                            struct pt_error_rec *err) {
  const struct nt_env *emin = &log->env[NT_ENV_MIN_NCHANNELS], *emax = &log->env[NT_ENV_MAX_NCHANNELS];
  if (min >= 0 && max >= 0 && min > max)
    return fail(err, log->name, emin->line, "NCCL_MIN_NCHANNELS %d is above NCCL_MAX_NCHANNELS %d (line %d)",
                min, max, emax->line);
  if (cli >= 0) {
    if (max >= 0 && max != cli)
      return fail(err, log->name, emax->line, "--setting says channels=%d but the log sets NCCL_MAX_NCHANNELS=%d",
                  cli, max);
    if (min > cli)
      return fail(err, log->name, emin->line, "--setting says channels=%d but the log sets NCCL_MIN_NCHANNELS=%d",
                  cli, min);
    *out = cli;
    return 0;
  }
  if (max < 0 && min >= 0)
    return fail(err, log->name, emin->line,
                "NCCL_MIN_NCHANNELS alone does not fix the channel count (add NCCL_MAX_NCHANNELS or "
                "--setting channels=N)");
  *out = max;
  return 0;
}

/* The first line of the log that set anything, for messages. */
static int first_env_line(const struct nt_log *log) {
  int line = 0;
  for (int v = 0; v < NT_NENV; v++)
    if (log->env[v].line && (!line || log->env[v].line < line)) line = log->env[v].line;
  return line;
}

/* The count a log forced, however it said so: --setting, else
 * NCCL_MAX_NCHANNELS, else NCCL_MIN_NCHANNELS (a floor that raises NCCL's
 * count); 0 when none did. */
static int forced_count(int cli, int min, int max) {
  return cli >= 0 ? cli : max >= 0 ? max : min > 0 ? min : 0;
}

int imp_setting_resolve(const struct nt_log *log, const struct imp_setting *cli, int coll,
                        struct imp_setting *out, int *is_default, int *forced,
                        struct pt_error_rec *err) {
  int algo, proto, min, max, rc;
  *out = IMP_SETTING_NONE;
  *is_default = 0;
  *forced = 0;
  if ((rc = env_value(log, NT_ENV_ALGO, &algo, err)) || (rc = env_value(log, NT_ENV_PROTO, &proto, err)) ||
      (rc = env_value(log, NT_ENV_MIN_NCHANNELS, &min, err)) ||
      (rc = env_value(log, NT_ENV_MAX_NCHANNELS, &max, err)))
    return rc;
  if (cli->algo < 0 && cli->proto < 0 && cli->channels < 0 && algo < 0 && proto < 0 && min < 0 && max < 0) {
    *is_default = 1;
    return 0;
  }
  if ((rc = check_agree(log, NT_ENV_ALGO, cli->algo, algo, err)) ||
      (rc = check_agree(log, NT_ENV_PROTO, cli->proto, proto, err)))
    return rc;
  out->algo = cli->algo >= 0 ? cli->algo : algo;
  out->proto = cli->proto >= 0 ? cli->proto : proto;
  /* Where NCCL does not clamp the tuner's count (all-gather, CollNet;
   * include/pcie/table.h), a candidate is one measured with NCCL's own
   * count: channels 0. A run that forced a count is reported in *forced
   * for the caller to leave out. */
  if (out->algo >= 0 && pt_channels_unclamped(coll, out->algo)) {
    *forced = forced_count(cli->channels, min, max);
    out->channels = 0;
  } else if ((rc = resolve_channels(log, cli->channels, min, max, &out->channels, err))) {
    return rc;
  }
  if (out->algo < 0 || out->proto < 0 || out->channels < 0) {
    char missing[64] = "";
    if (out->algo < 0) strcat(missing, " algo");
    if (out->proto < 0) strcat(missing, " proto");
    if (out->channels < 0) strcat(missing, " channels");
    return fail(err, log->name, first_env_line(log),
                "incomplete setting: no%s (give them with --setting before the log, or NCCL_ALGO, "
                "NCCL_PROTO and NCCL_MAX_NCHANNELS in it)",
                missing);
  }
  return 0;
}

void imp_setting_format(const struct imp_setting *s, char *buf, size_t len) {
  const char *a = pt_algo_name(s->algo), *p = pt_proto_name(s->proto);
  if (s->channels == 0) snprintf(buf, len, "%s/%s/NCCL's channels", a ? a : "?", p ? p : "?");
  else snprintf(buf, len, "%s/%s/%d", a ? a : "?", p ? p : "?", s->channels);
}
