/* models/memory/allocator_pages.c — expandable segments (allocator.h): one growing segment per pool,
 * mapped page by page while an allocated block overlaps the page. */
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

/* Expandable: a free block of at least `size` in `pool`, extending the segment's end when
 * no free block is large enough. */
Block *
alloc_expandable_block (ModelAllocator *a, int pool, guint64 size)
{
  Block *b = alloc_best_fit (a, pool, size);
  if (b != NULL)
    {
      alloc_free_remove (b);
      return b;
    }
  if (a->grow[pool] == NULL)
    a->grow[pool] = alloc_segment_new (a, pool, 0);
  Segment *s = a->grow[pool];
  Block *tail = s->last;
  if (tail != NULL && !tail->allocated)
    {
      alloc_free_remove (tail);
      s->size += size - tail->size;
      tail->size = size;
      return tail;
    }
  b = g_new0 (Block, 1);
  *b = (Block){ .offset = s->size, .size = size, .seg = s, .prev = tail };
  if (tail != NULL)
    tail->next = b;
  else
    s->first = b;
  s->last = b;
  s->size += size;
  return b;
}

