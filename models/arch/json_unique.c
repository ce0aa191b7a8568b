/* models/arch/json_unique.c — a member name repeated in one JSON object (json_unique.h).
 * JsonParser's "object-member" signal fires after each member is parsed, with its object:
 * the names seen per object (lookups only, nothing iterated) give the first repeat, and a
 * walk from the root afterwards gives that object's path.
 */
#include "config.h"
#include "models/arch/json_unique.h"

typedef struct
{
  GHashTable *seen;   /* JsonObject * → GHashTable of member names (owned) */
  JsonObject *dup_in; /* the object holding the first repeated name, or NULL */
  char *dup_name;
} Dups;

static void
on_member (JsonParser *parser, JsonObject *object, const char *name, gpointer data)
{
  (void) parser;
  Dups *d = data;
  if (d->dup_in != NULL)
    return;
  GHashTable *names = g_hash_table_lookup (d->seen, object);
  if (names == NULL)
    {
      names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
      g_hash_table_insert (d->seen, object, names);
    }
  if (!g_hash_table_add (names, g_strdup (name)))
    {
      d->dup_in = object;
      d->dup_name = g_strdup (name);
    }
}

/* The dotted path of `target` under `node` ("" for the root object) into *path; FALSE when
 * it is not there. Arrays are entered with "[i]". */
static gboolean
path_of (JsonNode *node, JsonObject *target, GString *path)
{
  gsize len = path->len;
  if (JSON_NODE_HOLDS_OBJECT (node))
    {
      JsonObject *o = json_node_get_object (node);
      if (o == target)
        return TRUE;
      g_autoptr (GList) members = json_object_get_members (o);
      for (GList *m = members; m != NULL; m = m->next)
        {
          g_string_append_printf (path, "%s%s", len > 0 ? "." : "", (const char *) m->data);
          if (path_of (json_object_get_member (o, m->data), target, path))
            return TRUE;
          g_string_truncate (path, len);
        }
    }
  else if (JSON_NODE_HOLDS_ARRAY (node))
    {
      JsonArray *a = json_node_get_array (node);
      for (guint i = 0; i < json_array_get_length (a); i++)
        {
          g_string_append_printf (path, "[%u]", i);
          if (path_of (json_array_get_element (a, i), target, path))
            return TRUE;
          g_string_truncate (path, len);
        }
    }
  return FALSE;
}

gboolean
model_json_load_unique (JsonParser *parser, const char *text, char **dup_path, GError **error)
{
  g_return_val_if_fail (parser != NULL && text != NULL && dup_path != NULL, FALSE);
  *dup_path = NULL;
  Dups dups = { g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
                                       (GDestroyNotify) g_hash_table_unref), NULL, NULL };
  gulong id = g_signal_connect (parser, "object-member", G_CALLBACK (on_member), &dups);
  gboolean parsed = json_parser_load_from_data (parser, text, -1, error);
  g_signal_handler_disconnect (parser, id);
  g_hash_table_unref (dups.seen);
  g_autofree char *name = dups.dup_name;
  if (!parsed || dups.dup_in == NULL)
    return parsed;
  g_autoptr (GString) where = g_string_new (NULL);
  JsonNode *root = json_parser_get_root (parser);
  if (root == NULL || !path_of (root, dups.dup_in, where))
    g_string_truncate (where, 0);
  *dup_path = g_strdup_printf ("%s%s%s", where->str, where->len > 0 ? "." : "", name);
  return TRUE;
}
