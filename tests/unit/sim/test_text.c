/* tests/unit/sim/test_text.c — sim/text.h: nearest-name hints and printable messages
 * (control characters and bytes that are not UTF-8 escaped, long text cut in the middle,
 * escapes never cut, applying twice changes nothing). */
#include "config.h"
#include "sim/text.h"
#include "tests/testlib.h"

#include <math.h>
#include <glib/gstdio.h>
#include <string.h>

/* Name tables: the index, or one error listing every accepted name (NULL is unknown too). */
static void
test_lookup (void)
{
  static const char *const names[] = { "ring", "tree", NULL };
  int i = -1;
  CU_ASSERT_TRUE (sim_text_lookup (names, "algorithm", "tree", &i, NULL));
  CU_ASSERT_EQUAL (i, 1);
  g_autoptr (GError) e = NULL;
  CU_ASSERT_FALSE (sim_text_lookup (names, "algorithm", "rng", &i, &e));
  CU_ASSERT_EQUAL (i, 1);
  CU_ASSERT_STRING_EQUAL (e ? e->message : "",
                          "unknown algorithm 'rng' (expected one of: ring, tree)");
  CU_ASSERT_FALSE (sim_text_lookup (names, "algorithm", NULL, &i, NULL));
}

/* 0.1 needs 15 digits ("0.1"), 1/3 needs 16, 0.1 + 0.2 needs 17 (0.30000000000000004);
 * every value reads back exactly, pseudo-random ones included; NaN prints "nan". */
static void
test_format_double (void)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  CU_ASSERT_STRING_EQUAL (sim_text_format_double (buf, 0.1), "0.1");
  CU_ASSERT_STRING_EQUAL (sim_text_format_double (buf, 1.0 / 3), "0.3333333333333333");
  CU_ASSERT_STRING_EQUAL (sim_text_format_double (buf, 0.1 + 0.2), "0.30000000000000004");
  CU_ASSERT_STRING_EQUAL (sim_text_format_double (buf, 1073741824), "1073741824");
  CU_ASSERT_STRING_EQUAL (sim_text_format_double (buf, NAN), "nan");
  GRand *r = g_rand_new_with_seed (7);
  for (int i = 0; i < 10000; i++)
    {
      double v = g_rand_double_range (r, -1e6, 1e6) * pow (10, g_rand_int_range (r, -30, 30));
      CU_ASSERT_EQUAL (g_ascii_strtod (sim_text_format_double (buf, v), NULL), v);
    }
  g_rand_free (r);
}

static void
assert_printable (const char *in, gsize max, const char *expected)
{
  g_autofree char *out = sim_text_printable (in, max);
  if (strcmp (out, expected) != 0)
    g_printerr ("\n  printable(%zu) → '%s', expected '%s'\n", (size_t) max, out, expected);
  CU_ASSERT_STRING_EQUAL (out, expected);
}

static void
test_hint (void)
{
  const char *const names[] = { "micro_batch", "seq_len", NULL };
  CU_ASSERT_STRING_EQUAL (sim_text_nearest ("micro_bach", names), "micro_batch");
  CU_ASSERT_PTR_NULL (sim_text_nearest ("precision", names));
  /* two edits of three letters is another word ("foo" is not "moe"); two of five is a typo */
  const char *const groups[] = { "model", "moe", "run", NULL };
  CU_ASSERT_PTR_NULL (sim_text_nearest ("foo", groups));
  CU_ASSERT_STRING_EQUAL (sim_text_nearest ("mdoel", groups), "model");
  CU_ASSERT_STRING_EQUAL (sim_text_nearest ("mo", groups), "moe");
  /* no near name: the names the word begins, when there are 1 to 3 */
  const char *const gpus[] = { "A100-40GB-SXM", "A100-80GB-SXM", "A100-80GB-PCIE", "H100-SXM",
                               "H100-PCIE", "B200-SXM", "GB200", "RTX-4090", "RTX-3090",
                               "RTX-A6000", "RTX-6000", NULL };
  g_autofree char *h100 = sim_text_with_hint (g_strdup ("unknown GPU 'h100'"), "h100", gpus);
  CU_ASSERT_STRING_EQUAL (h100, "unknown GPU 'h100'; did you mean 'H100-SXM' or 'H100-PCIE'?");
  g_autofree char *a100 = sim_text_with_hint (g_strdup ("x"), "A100", gpus);
  CU_ASSERT_STRING_EQUAL (a100, "x; did you mean 'A100-40GB-SXM', 'A100-80GB-SXM' or "
                                "'A100-80GB-PCIE'?");
  /* the nearest by edits first, then the name it begins */
  g_autofree char *b200 = sim_text_with_hint (g_strdup ("x"), "B200", gpus);
  CU_ASSERT_STRING_EQUAL (b200, "x; did you mean 'GB200' or 'B200-SXM'?");
  g_autofree char *gb = sim_text_with_hint (g_strdup ("x"), "GB200", gpus); /* itself: nearest */
  CU_ASSERT_STRING_EQUAL (gb, "x; did you mean 'GB200'?");
  g_autofree char *rtx = sim_text_with_hint (g_strdup ("x"), "RTX", gpus); /* 4 begin it */
  CU_ASSERT_STRING_EQUAL (rtx, "x");
  g_autofree char *none = sim_text_with_hint (g_strdup ("x"), "", gpus);
  CU_ASSERT_STRING_EQUAL (none, "x");
}

static void
test_escapes (void)
{
  assert_printable ("plain text, 80 GiB", 0, "plain text, 80 GiB");
  assert_printable ("a\nb\tc\rd", 0, "a\\x0Ab\\x09c\\x0Dd");     /* one line */
  assert_printable ("\x7f" "ELF\x01", 0, "\\x7FELF\\x01");       /* DEL and C0 */
  assert_printable ("A100\xff-80GB", 0, "A100\\xFF-80GB");        /* not UTF-8 */
  assert_printable ("trunc\xc3", 0, "trunc\\xC3");               /* cut sequence */
  assert_printable ("x\xc2\x85y", 0, "x\\xC2\\x85y");            /* C1 control (NEL) */
  assert_printable ("µs, “quoted”, …", 0, "µs, “quoted”, …");    /* UTF-8 kept */
  assert_printable ("back\\slash", 0, "back\\slash");            /* kept: idempotent */
}

static void
test_cap (void)
{
  assert_printable ("0123456789", 10, "0123456789");             /* fits */
  assert_printable ("0123456789", 7, "012…789");                 /* head, "…", tail */
  assert_printable ("0123456789", 6, "012…89");
  /* An escape (4 characters) is kept whole or left out, never cut. */
  assert_printable ("ab\x01" "cdefgh", 8, "ab…fgh");
  /* A 5000-character value in a message: head and tail kept, at most max characters. */
  GString *s = g_string_new ("f.ini: group [training], key 'precision': unknown '");
  for (int i = 0; i < 5000; i++)
    g_string_append_c (s, 'x');
  g_string_append (s, "' (expected one of: fp32, bf16_mixed)");
  g_autofree char *out = sim_text_printable (s->str, 200);
  CU_ASSERT_EQUAL (g_utf8_strlen (out, -1), 200);
  CU_ASSERT_TRUE (g_str_has_prefix (out, "f.ini: group [training], key 'precision'"));
  CU_ASSERT_TRUE (g_str_has_suffix (out, "(expected one of: fp32, bf16_mixed)"));
  CU_ASSERT_PTR_NOT_NULL (strstr (out, "…"));
  g_autofree char *again = sim_text_printable (out, 200);
  CU_ASSERT_STRING_EQUAL (again, out); /* applying twice changes nothing */
  g_string_free (s, TRUE);
}

/* The first control character of a printed text, 0 for none (tab, new line, ESC, DEL, a C1
 * one; NULL and "" have none; a multi-byte character before it is skipped whole). */
static void
test_first_control (void)
{
  CU_ASSERT_EQUAL (sim_text_first_control (NULL), 0);
  CU_ASSERT_EQUAL (sim_text_first_control (""), 0);
  CU_ASSERT_EQUAL (sim_text_first_control ("S1 — Llama 3.2 1B"), 0);
  CU_ASSERT_EQUAL (sim_text_first_control ("a\tb\n"), 0x09);
  CU_ASSERT_EQUAL (sim_text_first_control ("é\x1b[31m"), 0x1b);
  CU_ASSERT_EQUAL (sim_text_first_control ("x\x7f"), 0x7f);
  CU_ASSERT_EQUAL (sim_text_first_control ("x\xc2\x85"), 0x85);
}

/* The label formatter writes what g_snprintf writes for %s, %d, %u, %lu and %% (negative,
 * zero and extreme numbers, an empty string, text around them), and refuses (-1) what it
 * does not reproduce: other conversions, flags, widths, a NULL string, a result that does
 * not fit (one byte short of the NUL included). */
static void
test_vformat (void)
{
  char buf[64], want[64];
  gssize n = sim_text_format (buf, sizeof buf, "fwd %s mb%d L%u", "attn", -7, 4294967295u);
  g_snprintf (want, sizeof want, "fwd %s mb%d L%u", "attn", -7, 4294967295u);
  CU_ASSERT_STRING_EQUAL (buf, want);
  CU_ASSERT_EQUAL (n, (gssize) strlen (want));
  n = sim_text_format (buf, sizeof buf, "%d|%d|%d|%u|%s|100%%", G_MININT, G_MAXINT, 0, 0u, "");
  g_snprintf (want, sizeof want, "%d|%d|%d|%u|%s|100%%", G_MININT, G_MAXINT, 0, 0u, "");
  CU_ASSERT_STRING_EQUAL (buf, want);
  CU_ASSERT_EQUAL (n, (gssize) strlen (want));
  n = sim_text_format (buf, sizeof buf, "grads bucket %u (%" G_GUINT64_FORMAT " MiB)", 12u,
                       G_MAXUINT64);
  g_snprintf (want, sizeof want, "grads bucket %u (%" G_GUINT64_FORMAT " MiB)", 12u,
              G_MAXUINT64);
  CU_ASSERT_STRING_EQUAL (buf, want);
  CU_ASSERT_EQUAL (n, (gssize) strlen (want));
  CU_ASSERT_EQUAL (sim_text_format (buf, sizeof buf, "plain"), 5);
  CU_ASSERT_STRING_EQUAL (buf, "plain");
  CU_ASSERT_EQUAL (sim_text_format (buf, sizeof buf, "%x", 1u), -1);
  CU_ASSERT_EQUAL (sim_text_format (buf, sizeof buf, "%3d", 1), -1);
  CU_ASSERT_EQUAL (sim_text_format (buf, sizeof buf, "%.2f", 1.0), -1);
  CU_ASSERT_EQUAL (sim_text_format (buf, sizeof buf, "a%s", (const char *) NULL), -1);
  CU_ASSERT_EQUAL (sim_text_format (buf, 5, "%s", "abcde"), -1); /* no room for the NUL */
  CU_ASSERT_EQUAL (sim_text_format (buf, 6, "ab%dcd", 12), -1);
  CU_ASSERT_EQUAL (sim_text_format (buf, 6, "%s", "abcd"), 4);
  CU_ASSERT_STRING_EQUAL (buf, "abcd");
}

/* sim_text_label: the stack buffer when the formatter takes the text, GLib's copy otherwise
 * (a conversion it refuses, or too long), the same text either way. */
static void
test_label (void)
{
  char buf[16];
  g_autofree char *slow = NULL;
  const char *t = sim_text_label (buf, sizeof buf, &slow, "grads L%u", 7u);
  CU_ASSERT_PTR_EQUAL (t, buf);
  CU_ASSERT_PTR_NULL (slow);
  CU_ASSERT_STRING_EQUAL (t, "grads L7");
  t = sim_text_label (buf, sizeof buf, &slow, "%x shard", 255u);
  CU_ASSERT_PTR_NOT_NULL_FATAL (slow);
  CU_ASSERT_PTR_EQUAL (t, slow);
  CU_ASSERT_STRING_EQUAL (t, "ff shard");
  g_autofree char *slow2 = NULL;
  t = sim_text_label (buf, sizeof buf, &slow2, "%s shard", "a name longer than 16");
  CU_ASSERT_PTR_EQUAL (t, slow2);
  CU_ASSERT_STRING_EQUAL (t, "a name longer than 16 shard");
}

/* sim_text_read_file: the whole file and its length; a file holding a NUL byte refused
 * naming its offset (a JSON parser would stop there and take what precedes it); a missing
 * file "cannot open". */
static void
test_read_file (void)
{
  g_autofree char *dir = g_dir_make_tmp ("stepsim-text-XXXXXX", NULL);
  CU_ASSERT_FATAL (dir != NULL);
  g_autofree char *ok = g_build_filename (dir, "ok.json", NULL);
  g_autofree char *nul = g_build_filename (dir, "nul.json", NULL);
  CU_ASSERT_FATAL (g_file_set_contents (ok, "{\"a\": 1}", -1, NULL));
  CU_ASSERT_FATAL (g_file_set_contents (nul, "{\"a\": 1}\0junk", 13, NULL));
  g_autofree char *text = NULL;
  gsize length = 0;
  g_autoptr (GError) e = NULL;
  CU_ASSERT (sim_text_read_file (ok, &text, &length, &e));
  CU_ASSERT_STRING_EQUAL (text, "{\"a\": 1}");
  CU_ASSERT_EQUAL (length, 8);
  g_autofree char *text2 = NULL;
  CU_ASSERT_FALSE (sim_text_read_file (nul, &text2, NULL, &e));
  CU_ASSERT (e != NULL && strstr (e->message, "holds a NUL byte at offset 8") != NULL);
  CU_ASSERT (text2 == NULL);
  g_clear_error (&e);
  g_autofree char *missing = g_build_filename (dir, "none.json", NULL);
  CU_ASSERT_FALSE (sim_text_read_file (missing, &text2, NULL, &e));
  CU_ASSERT (e != NULL && strstr (e->message, "cannot open") != NULL);
  g_unlink (ok);
  g_unlink (nul);
  g_rmdir (dir);
}

int
main (void)
{
  const StepsimTest tests[] = {
    { "doubles: fewest digits that round-trip", test_format_double },
    { "name tables: index or an error listing the names", test_lookup },
    { "nearest-name hint", test_hint },
    { "control characters and bad bytes escaped", test_escapes },
    { "long text cut in the middle", test_cap },
    { "first control character", test_first_control },
    { "label formatter: g_snprintf's text or a refusal", test_vformat },
    { "label: on the stack or GLib's copy", test_label },
    { "a file read whole; a NUL byte refused", test_read_file },
  };
  return STEPSIM_RUN_TESTS ("sim/text", tests);
}
