/* models/arch/json_unique.h — json-glib parsing that finds a member name repeated in one
 * object. json-glib keeps the last of a repeated name without a word (its parser replaces
 * the member), as Python's json.load does for transformers and DeepSpeed, so a repeated
 * key is a contradiction in the file that the readers of config.json (hf_config.c) and
 * ds_config.json (models/stack/ds_config.c) refuse, each in its own error format.
 * Included only by those two json-glib readers (tests/layering.sh).
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

/* Loads `text` (NUL-terminated) into `parser` with json_parser_load_from_data. FALSE with
 * json-glib's own error ("<data>:LINE:COL: Parse error: …") when it is not valid JSON. On
 * success TRUE, and *dup_path is NULL or (owned by the caller) the dotted JSON path of the
 * first name repeated within one object: "rope_scaling.factor", "zero_optimization.stage",
 * array elements as "[i]" ("a[2].b"), a top-level name as itself. */
gboolean model_json_load_unique (JsonParser *parser, const char *text, char **dup_path,
                                 GError **error);
