/* JSON output shared by the commands' --json modes (check, show, simulate). */
#ifndef PCIE_CLI_JSON_H
#define PCIE_CLI_JSON_H

/* Prints s as a JSON string literal on stdout ("" for NULL): quotes and
 * backslashes escaped, control bytes as \u00XX, other bytes as they are. */
void cli_json_str(const char *s);

#endif
