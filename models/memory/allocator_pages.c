/* models/memory/allocator_pages.c — the page map of an expandable segment (allocator.h): a
 * growing segment per pool is mapped page by page while an allocated block overlaps the
 * page. A leaf: allocator.c calls these, they call nothing of it back. */
#include "config.h"
#include "models/memory/allocator-private.h"

/* Pages [first, last] covered by block b. */
static void
page_span (const Block *b, guint *first, guint *last)
{
  *first = (guint) (b->offset / b->seg->page);
  *last = (guint) ((b->offset + b->size - 1) / b->seg->page);
}

/* Bytes of pages b covers that are not mapped yet. */
guint64
alloc_unmapped_bytes (const Block *b)
{
  guint first, last;
  page_span (b, &first, &last);
  Segment *s = b->seg;
  if (s->mapped->len <= last)
    {
      g_array_set_size (s->mapped, last + 1);
      g_array_set_size (s->refs, last + 1);
    }
  guint64 n = 0;
  for (guint p = first; p <= last; p++)
    if (!g_array_index (s->mapped, guint8, p))
      n += s->page;
  return n;
}

void
alloc_pages_ref (ModelAllocator *a, const Block *b, int delta)
{
  guint first, last;
  page_span (b, &first, &last);
  Segment *s = b->seg;
  for (guint p = first; p <= last; p++)
    {
      g_array_index (s->refs, guint32, p) += delta;
      if (delta > 0 && !g_array_index (s->mapped, guint8, p))
        {
          g_array_index (s->mapped, guint8, p) = 1;
          a->reserved += s->page;
        }
    }
}

void
alloc_pages_unmap_unused (ModelAllocator *a, Segment *s)
{
  for (guint p = 0; p < s->mapped->len; p++)
    if (g_array_index (s->mapped, guint8, p) && g_array_index (s->refs, guint32, p) == 0)
      {
        g_array_index (s->mapped, guint8, p) = 0;
        a->reserved -= s->page;
      }
}
