/* hardware/collective_tuner.c — a platform's collective tuner as data: which (algorithm,
 * protocol) NCCL runs when a tuner plugin, not NCCL's own cost model (ncclTopoTuneModel,
 * hardware/collective_nccl.c), makes the choice. A node names its tuner (HwNodeSpec
 * collective_tuner); the cost of whatever is chosen is still this model's
 * (hardware/collective_lower.c).
 *
 * "aws-ofi-p5en" and "aws-ofi-p6-b200" are the region tuner of AWS's NCCL plugin,
 * aws/aws-ofi-nccl at commit 2daf7d303aa139a03140aa530957d10521e4478d (2026-08-21),
 * src/tuner/nccl_ofi_regions.cpp, which NCCL_TUNER_PLUGIN=ofi loads on P5en and P6-B200
 * (src/tuner/nccl_ofi_tuner.cpp: the region tuner is chosen whenever the platform has
 * regions; ml-engineering network/README.md logs "base Tuner is chosen for platform:
 * p6-b200.48xlarge" and "...: p5en.48xlarge" on the clusters of C4–C6). How it decides
 * (region_get_coll_info_internal_v3):
 *  - Communicators of at most 2 nodes are left to NCCL's own tuner ("the regions are not
 *    well defined"), as are rank layouts without a table: P5en and P6 have tables for 8 ranks
 *    per node and for 1 rank per node (region_init_internal_p5en / _p6), for all-reduce,
 *    all-gather and reduce-scatter; broadcast has none.
 *  - The point is (log2 nBytes, log2 nRanks), nBytes being NCCL's
 *    ncclFuncMaxSendRecvCount × element size (enqueue.cc getAlgoInfo): the per-rank buffer of
 *    all-reduce, the gathered output of all-gather, the input of reduce-scatter — the sizes
 *    of collective.h. Each region is a polygon over those coordinates (the vertices are
 *    given in bytes and ranks and transformed to log2 once, set_regions); some vertices are
 *    lines between two given points extended to the table's edge (extend_region).
 *  - Regions are tried in table order; one whose (algorithm, protocol) NCCL cannot run is
 *    skipped (its cost table holds NCCL_ALGO_PROTO_IGNORE), and the first whose polygon
 *    holds the point, inside or on an edge (is_inside_region: ray casting), is chosen. No
 *    region: NCCL's own tuner.
 * Transcription: the two region_init functions below are the upstream code with only the
 * C++ names replaced (nccl_ofi_tuner_point_t → Pt, nccl_ofi_tuner_region_t → Region, the
 * set_regions call without its error path), keeping upstream's layout so that a diff against
 * a newer nccl_ofi_regions.cpp stays readable; the geometry (intersect, distance,
 * is_inside_region, extend_region, transform_log2) is a line-by-line port.
 * Checked 2026-12-06: the P6 vertices, algorithm and protocol names and extend_region calls
 * are token for token those of upstream lines 969-1333 (a diff of the extracted tokens).
 * Not modelled: the nChannels the tuner also sets on P6 (Tree/LL128 at 4–32 MiB, PAT), its
 * chunk sizes, and the algorithms this model does not lower (NVLS_TREE, PAT): the caller
 * treats those regions as NCCL treats an ignored one (hw_tuner_regions_at returns them; the
 * lowering skips them), which on real P5en/P6 hardware with NVLS is an approximation.
 * Units: B (sizes), ranks.
 */
#include "config.h"
#include "hardware/collective-private.h"
#include "sim/text.h"

#include <math.h>
#include <string.h>

/* NCCL's function, algorithm and protocol numbers (src/include/nccl_common.h, device.h). */
enum { ncclFuncBroadcast, ncclFuncReduce, ncclFuncAllGather, ncclFuncReduceScatter,
       ncclFuncAllReduce, N_FUNCS };
enum { NCCL_ALGO_TREE, NCCL_ALGO_RING, NCCL_ALGO_COLLNET_DIRECT, NCCL_ALGO_COLLNET_CHAIN,
       NCCL_ALGO_NVLS, NCCL_ALGO_NVLS_TREE, NCCL_ALGO_PAT };
enum { NCCL_PROTO_LL, NCCL_PROTO_LL128, NCCL_PROTO_SIMPLE };

/* include/tuner/nccl_ofi_tuner_region.h */
#define TUNER_MAX_NUM_VERTICES 20
#define TUNER_MAX_RANKS 1024.0 * 1024
#define TUNER_MAX_SIZE 100.0 * 1024 * 1024 * 1024
#define MAX_REGIONS 8 /* per function; the P5en and P6 tables have at most 5 */

typedef struct
{
  double x, y;
} Pt;

typedef struct
{
  int algorithm;
  int protocol;
  size_t num_vertices;
  Pt vertices[TUNER_MAX_NUM_VERTICES];
} Region;

typedef struct
{
  size_t num_regions[N_FUNCS];
  Region regions[N_FUNCS][MAX_REGIONS];
} RegionSet;

/* nccl_ofi_tuner_point::transform_log2: 0 becomes 1e-6 first. */
static Pt
to_log2 (Pt p)
{
  const double eps = 1e-6;
  return (Pt){ log2 (p.x == 0 ? eps : p.x), log2 (p.y == 0 ? eps : p.y) };
}

static Pt
vsub (Pt a, Pt b)
{
  return (Pt){ a.x - b.x, a.y - b.y };
}

static double
vdot (Pt a, Pt b)
{
  return a.x * b.x + a.y * b.y;
}

static double
vcross (Pt a, Pt b)
{
  return a.x * b.y - a.y * b.x;
}

static Pt
vmadd (Pt a, long double s, Pt b)
{
  return (Pt){ (double) (a.x + s * b.x), (double) (a.y + s * b.y) };
}

/* Whether segment x0→x1 crosses y0→y1: 1 yes, −1 no, 0 at (or too near) y0 or y1 or
 * parallel; *sect (may be NULL) the intersection (upstream intersect). */
static int
intersect (Pt x0, Pt x1, Pt y0, Pt y1, double eps, Pt *sect)
{
  Pt dx = vsub (x1, x0);
  Pt dy = vsub (y1, y0);
  double d = vcross (dy, dx);
  if (fabs (d) < eps)
    return 0;
  long double a = (long double) (vcross (x0, dx) - vcross (y0, dx)) / d;
  if (sect != NULL)
    *sect = vmadd (y0, a, dy);
  if (a < -eps || a > 1 + eps)
    return -1;
  if (a < eps || a > 1 - eps)
    return 0;
  a = (vcross (x0, dy) - vcross (y0, dy)) / d;
  if (a < 0 || a > 1)
    return -1;
  return 1;
}

/* Distance from x to the segment y0→y1, HUGE_VAL when its foot is outside (upstream
 * distance). */
static double
distance (Pt x, Pt y0, Pt y1, double eps)
{
  Pt dy = vsub (y1, y0);
  Pt x1 = { x.x + dy.y, x.y - dy.x }, s = { 0, 0 };
  if (intersect (x, x1, y0, y1, eps, &s) == -1)
    return HUGE_VAL;
  s = vsub (s, x);
  return sqrt (vdot (s, s));
}

/* 1 inside, 0 on an edge, −1 outside (upstream is_inside_region: ray casting towards a
 * point beyond every table, rosettacode "Ray-casting algorithm"). */
static int
is_inside_region (Pt point, const Region *region)
{
  const double eps = 1e-10;
  size_t n = region->num_vertices;
  for (size_t i = 0; i < n; i++)
    if (distance (point, region->vertices[i], region->vertices[(i + 1) % n], eps) < eps)
      return 0;
  double min_x = region->vertices[0].x, max_x = min_x;
  double min_y = region->vertices[1].y, max_y = min_y;
  for (size_t i = 0; i < n; i++)
    {
      const Pt *pv = &region->vertices[i];
      min_x = MIN (min_x, pv->x), max_x = MAX (max_x, pv->x);
      min_y = MIN (min_y, pv->y), max_y = MAX (max_y, pv->y);
    }
  if (point.x < min_x || point.x > max_x || point.y < min_y || point.y > max_y)
    return -1;
  Pt e = to_log2 ((Pt){ 2.0 * TUNER_MAX_SIZE, 2.0 * TUNER_MAX_RANKS });
  int crosses = 0;
  for (size_t i = 0; i < n; i++)
    if (intersect (point, e, region->vertices[i], region->vertices[(i + 1) % n], eps, NULL) == 1)
      crosses++;
  return (crosses & 1) ? 1 : -1;
}

/* The point of the line through a and b farthest towards z with z's x or z's y (upstream
 * extend_region; a, b, z and the result in bytes and ranks, the line in log2 space). */
static Pt
extend_region (Pt a, Pt b, Pt z)
{
  a = to_log2 (a), b = to_log2 (b), z = to_log2 (z);
  Pt ret;
  if (a.x == b.x)
    ret = (Pt){ a.x, z.y };
  else if (a.y == b.y)
    ret = (Pt){ z.x, a.y };
  else
    {
      double m = (a.y - b.y) / (a.x - b.x);
      double c = b.y - m * b.x;
      double projected_zy = m * z.x + c;
      ret = projected_zy < z.y ? (Pt){ z.x, projected_zy } : (Pt){ (z.y - c) / m, z.y };
    }
  return (Pt){ pow (2.0, ret.x), pow (2.0, ret.y) };
}

/* Copies a function's regions into `set`, vertices to log2 (upstream set_regions). */
static void
set_regions (RegionSet *set, int coll, size_t n, const Region *regions)
{
  g_assert (n <= MAX_REGIONS);
  set->num_regions[coll] = n;
  for (size_t i = 0; i < n; i++)
    {
      Region *r = &set->regions[coll][i];
      *r = regions[i];
      g_assert (r->num_vertices > 1 && r->num_vertices <= TUNER_MAX_NUM_VERTICES);
      for (size_t j = 0; j < r->num_vertices; j++)
        r->vertices[j] = to_log2 (r->vertices[j]);
    }
}

/* ---- the tables (verbatim; see the file comment) ---------------------------------------- */

/* clang-format off */
/* aws-ofi-nccl src/tuner/nccl_ofi_regions.cpp lines 295-662, region_init_internal_p5en */
static void
regions_p5en (RegionSet *set, size_t nRanks, size_t nNodes)
{
	int collType;

	if (nRanks == 8 * nNodes) {
		{
			collType = ncclFuncAllReduce;
			Pt extended_tree_ll =
				extend_region((Pt){196608, 192},
							  (Pt){196608, 1024},
							  (Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});
			Pt extended_tree_ll128 =
				extend_region((Pt){129499136, 127},
							  (Pt){218103808, 1024},
							  (Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});
			Pt extended_nvlstree_simple =
				extend_region((Pt){7516192768, 256},
							  (Pt){17179869184, 448},
							  (Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});

			const Region regions[] = {
				{.algorithm = NCCL_ALGO_TREE,
				 .protocol = NCCL_PROTO_LL,
				 .num_vertices = 5,
				 .vertices = {{0, 16}, {196608, 16}, {196608, 1024}, extended_tree_ll, {0, TUNER_MAX_RANKS}}},
				{.algorithm = NCCL_ALGO_TREE,
				 .protocol = NCCL_PROTO_LL128,
				 .num_vertices = 7,
				 .vertices = {
					extended_tree_ll,
					{196608, 1024},
					{196608, 16},
					{13107200, 16},
					{129499136, 127},
					{218103808, 1024},
					extended_tree_ll128}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_LL128,
				 .num_vertices = 6,
				 .vertices = {
					{129499136, 127},
					{13107200, 16},
					{29884416, 16},
					{293601280, 32},
					{589299712, 64},
					{549453824, 128}}},
				{.algorithm = NCCL_ALGO_NVLS_TREE,
				 .protocol = NCCL_PROTO_SIMPLE,
				 .num_vertices = 12,
				 .vertices = {
					extended_tree_ll128,
					{218103808, 1024},
					{129499136, 127},
					{549453824, 128},
					{589299712, 64},
					{293601280, 32},
					{29884416, 16},
					{TUNER_MAX_SIZE, 16},
					{509607936, 32},
					{7516192768, 256},
					{17179869184, 448},
					extended_nvlstree_simple}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_SIMPLE,
				 .num_vertices = 5,
				 .vertices = {
					extended_nvlstree_simple,
					{17179869184, 448},
					{7516192768, 256},
					{509607936, 32},
					{TUNER_MAX_SIZE, 16}}}};
			set_regions (set, collType, G_N_ELEMENTS (regions), regions);
		}
		{
			collType = ncclFuncAllGather;
			Pt extended_ring_ll =
				extend_region((Pt){28305408, 768},
							  (Pt){33554432, 1024},
							  (Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});
			Pt extended_ring_ll128 =
				extend_region((Pt){7247754240, 384},
							  (Pt){17179865088, 896},
							  (Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});

			const Region regions[] = {
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_LL,
				 .num_vertices = 9,
				 .vertices = {
					{0, 16},
					{786432, 16},
					{4718592, 128},
					{13630464, 384},
					{19922944, 512},
					{28305408, 768},
					{33554432, 1024},
					extended_ring_ll,
					{0, TUNER_MAX_RANKS}}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_LL128,
				 .num_vertices = 12,
				 .vertices = {
					extended_ring_ll,
					{33554432, 1024},
					{28305408, 768},
					{19922944, 512},
					{13630464, 384},
					{4718592, 128},
					{786432, 16},
					{236978176, 16},
					{956301312, 64},
					{7247754240, 384},
					{17179865088, 896},
					extended_ring_ll128}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_SIMPLE,
				 .num_vertices = 7,
				 .vertices = {
					extended_ring_ll128,
					{17179865088, 896},
					{7247754240, 384},
					{956301312, 64},
					{494927872, 32},
					{236978176, 16},
					{TUNER_MAX_SIZE, 16}}}};
			set_regions (set, collType, G_N_ELEMENTS (regions), regions);
		}
		{
			collType = ncclFuncReduceScatter;
			Pt extended_ring_ll =
				extend_region((Pt){7340032, 256},
							  (Pt){18874368, 512},
							  (Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});
			Pt extended_ring_ll128 =
				extend_region((Pt){7247757312, 256},
							  (Pt){17179869184, 640},
							  (Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});

			const Region regions[] = {
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_LL,
				 .num_vertices = 7,
				 .vertices = {
					{0, 16},
					{786432, 16},
					{4718592, 128},
					{7340032, 256},
					{18874368, 512},
					extended_ring_ll,
					{0, TUNER_MAX_RANKS}}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_LL128,
				 .num_vertices = 11,
				 .vertices = {
					extended_ring_ll,
					{18874368, 512},
					{7340032, 256},
					{4718592, 128},
					{786432, 16},
					{291504128, 16},
					{589299712, 32},
					{2415919104, 128},
					{7247757312, 256},
					{17179869184, 640},
					extended_ring_ll128}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_SIMPLE,
				 .num_vertices = 7,
				 .vertices = {
					extended_ring_ll128,
					{17179869184, 640},
					{7247757312, 256},
					{2415919104, 128},
					{589299712, 32},
					{291504128, 16},
					 {TUNER_MAX_SIZE, 16}}}};
			set_regions (set, collType, G_N_ELEMENTS (regions), regions);
		}
	} else if (nRanks == nNodes) {
		{
			collType = ncclFuncAllReduce;
			Pt extended_tree_ll128 =
				extend_region((Pt){524288, 8},
							  (Pt){1048576, 96},
							  (Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});
			Pt extended_tree_simple =
				extend_region((Pt){8388608, 32},
							  (Pt){33554432, 128},
							  (Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});
			Pt extended_ring_ll128 =
				extend_region((Pt){50331648, 16},
							  (Pt){301989888, 128},
							  (Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});

			const Region regions[] = {
				{.algorithm = NCCL_ALGO_TREE,
				 .protocol = NCCL_PROTO_LL,
				 .num_vertices = 4,
				 .vertices = {{0, 2}, {65536, 2}, {65536, 64}, {65536, TUNER_MAX_RANKS}}},
				{.algorithm = NCCL_ALGO_TREE,
				 .protocol = NCCL_PROTO_LL128,
				 .num_vertices = 11,
				 .vertices = {{65536, TUNER_MAX_RANKS},
							  {65536, 64},
							  {65536, 2},
							  {262144, 2},
							  {1048576, 4},
							  {4194304, 8},
							  {16777216, 16},
							  {33554432, 32},
							  {1048576, 32},
							  {1048576, 96},
							  extended_tree_ll128}},
				{.algorithm = NCCL_ALGO_TREE,
				 .protocol = NCCL_PROTO_SIMPLE,
				 .num_vertices = 6,
				 .vertices = {extended_tree_ll128,
							  {1048576, 96},
							  {1048577, 32},
							  {33554431, 32},
							  {33554432, 128},
							  extended_tree_simple}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_LL128,
				 .num_vertices = 11,
				 .vertices = {extended_tree_simple,
							  {33554432, 128},
							  {33554433, 32},
							  {16777217, 16},
							  {4194305, 8},
							  {1048577, 4},
							  {262144, 2},
							  {6291456, 2},
							  {50331648, 16},
							  {301989888, 128},
							  extended_ring_ll128}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_SIMPLE,
				 .num_vertices = 5,
				 .vertices = {extended_ring_ll128,
							  {301989888, 128},
							  {50331648, 16},
							  {6291456, 2},
							  {TUNER_MAX_SIZE, 2}}}};
			set_regions (set, collType, G_N_ELEMENTS (regions), regions);
		}
		{
			collType = ncclFuncAllGather;
			Pt extended_pat_simple =
				extend_region((Pt){50331648, 64},
							  (Pt){117440512, 128},
							  (Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});
			Pt extended_ring_ll128 =
				extend_region((Pt){50331648, 16},
							  (Pt){301989888, 128},
							  (Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});

			const Region regions[] = {
				{.algorithm = NCCL_ALGO_PAT,
				 .protocol = NCCL_PROTO_SIMPLE,
				 .num_vertices = 12,
				 .vertices = {{0, 2},
							  {65536, 2},
							  {1048576, 2},
							  {8388608, 8},
							  {16777216, 16},
							  {16777216, 32},
							  {50331648, 64},
							  {117440512, 128},
							  extended_pat_simple,
							  {TUNER_MAX_SIZE, TUNER_MAX_RANKS},
							  {65536, TUNER_MAX_RANKS},
							  {0, TUNER_MAX_RANKS}}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_LL128,
				 .num_vertices = 11,
				 .vertices = {extended_pat_simple,
							  {117440512, 128},
							  {50331648, 64},
							  {16777216, 32},
							  {16777217, 16},
							  {8388609, 8},
							  {1048576, 2},
							  {4194304, 2},
							  {50331648, 16},
							  {301989888, 128},
							  extended_ring_ll128}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_SIMPLE,
				 .num_vertices = 5,
				 .vertices = {extended_ring_ll128,
							  {301989888, 128},
							  {50331648, 16},
							  {4194304, 2},
							  {TUNER_MAX_SIZE, 2}}}};
			set_regions (set, collType, G_N_ELEMENTS (regions), regions);
		}
		{
			collType = ncclFuncReduceScatter;
			Pt extended_pat_simple =
				extend_region((Pt){50331648, 64},
							  (Pt){117440512, 128},
							  (Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});
			Pt extended_ring_ll128 =
				extend_region((Pt){50331648, 16},
							  (Pt){301989888, 128},
							  (Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});
			const Region regions[] = {
				{.algorithm = NCCL_ALGO_PAT,
				 .protocol = NCCL_PROTO_SIMPLE,
				 .num_vertices = 10,
				 .vertices = {{0, 2},
							  {65536, 2},
							  {1048576, 2},
							  {16777216, 32},
							  {50331648, 64},
							  {117440512, 128},
							  extended_pat_simple,
							  {TUNER_MAX_SIZE, TUNER_MAX_RANKS},
							  {65536, TUNER_MAX_RANKS},
							  {0, TUNER_MAX_RANKS}}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_LL128,
				 .num_vertices = 9,
				 .vertices = {extended_pat_simple,
							  {117440512, 128},
							  {50331648, 64},
							  {16777216, 32},
							  {1048576, 2},
							  {4194304, 2},
							  {50331648, 16},
							  {301989888, 128},
							  extended_ring_ll128}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_SIMPLE,
				 .num_vertices = 5,
				 .vertices = {extended_ring_ll128,
							  {301989888, 128},
							  {50331648, 16},
							  {4194304, 2},
							  {TUNER_MAX_SIZE, 2}}}};
			set_regions (set, collType, G_N_ELEMENTS (regions), regions);
		}
	}
}

/* aws-ofi-nccl src/tuner/nccl_ofi_regions.cpp lines 969-1333, region_init_internal_p6 */
static void
regions_p6 (RegionSet *set, size_t nRanks, size_t nNodes)
{
	int collType;

	if (nRanks == 8 * nNodes) {
		{
			collType = ncclFuncAllReduce;

			Pt extended_tree_ll =
				extend_region((Pt){393216, 16},
						(Pt){393216, 1024},
						(Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});
			Pt extended_tree_ll128 =
				extend_region((Pt){96993280, 1024},
						(Pt){106430464, 2048},
						(Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});
			Pt extended_nvlstree_simple =
				extend_region((Pt){10737418240, 512},
						(Pt){34359738368, 1500},
						(Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});

			const Region regions[] = {
			{.algorithm = NCCL_ALGO_TREE,
				.protocol = NCCL_PROTO_LL,
				.num_vertices = 4,
				.vertices = {{0, 16}, {393216, 16}, extended_tree_ll, {0, TUNER_MAX_RANKS}}},
			{.algorithm = NCCL_ALGO_TREE,
				.protocol = NCCL_PROTO_LL128,
				.num_vertices = 10,
				.vertices = {
					extended_tree_ll,
					{393216, 16},
					{4718592, 16},
					{18350080, 32},
					{40370176, 64},
					{57147392, 128},
					{72876032, 256},
					{96993280, 1024},
					{106430464, 2048},
					extended_tree_ll128}},
			{.algorithm = NCCL_ALGO_RING,
				.protocol = NCCL_PROTO_LL128,
				.num_vertices = 5,
				.vertices = {
					{90701824, 128},
					{50855936, 64},
					{18350080, 32},
					{133693440, 32},
					{120061952, 64}}},
			{.algorithm = NCCL_ALGO_NVLS_TREE,
				.protocol = NCCL_PROTO_SIMPLE,
				.num_vertices = 19,
				.vertices = {
					extended_tree_ll128,
					{106430464, 2048},
					{96993280, 1024},
					{72876032, 256},
					{57147392, 128},
					{40370176, 64},
					{18350080, 32},
					{50855936, 64},
					{90701824, 128},
					{120061952, 64},
					{133693440, 32},
					{18350080, 32},
					{4718592, 16},
					{TUNER_MAX_SIZE, 16},
					{435159040, 32},
					{1072693248, 64},
					{10737418240, 512},
					{34359738368, 1500},
					extended_nvlstree_simple}},
			{.algorithm = NCCL_ALGO_RING,
				.protocol = NCCL_PROTO_SIMPLE,
				.num_vertices = 5,
				.vertices = {
					extended_nvlstree_simple,
					{10737418240, 512},
					{1072693248, 64},
					{435159040, 32},
					{TUNER_MAX_SIZE, 16}}}};
			set_regions (set, collType, G_N_ELEMENTS (regions), regions);
		}
		{
			collType = ncclFuncAllGather;

			Pt extended_ring_ll =
				extend_region((Pt){74973184, 1024},
						(Pt){213385216, 2048},
						(Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});
			Pt extended_ring_ll128 =
				extend_region((Pt){8321499136, 512},
						(Pt){32212254720, 2048},
						(Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});

			const Region regions[] = {
				{.algorithm = NCCL_ALGO_RING,
					.protocol = NCCL_PROTO_LL,
					.num_vertices = 10,
					.vertices = {
						{0, 16},
						{786432, 16},
						{1572864, 32},
						{2621440, 64},
						{4718592, 128},
						{17301504, 256},
						{74973184, 1024},
						{213385216, 2048},
						extended_ring_ll,
						{0, TUNER_MAX_RANKS}}},
				{.algorithm = NCCL_ALGO_RING,
					.protocol = NCCL_PROTO_LL128,
					.num_vertices = 14,
					.vertices = {
						extended_ring_ll,
						{213385216, 2048},
						{74973184, 1024},
						{17301504, 256},
						{4718592, 128},
						{2621440, 64},
						{1572864, 32},
						{786432, 16},
						{198705152, 16},
						{456130560, 32},
						{871366656, 64},
						{8321499136, 512},
						{32212254720, 2048},
						extended_ring_ll128}},
				{.algorithm = NCCL_ALGO_RING,
					.protocol = NCCL_PROTO_SIMPLE,
					.num_vertices = 7,
					.vertices = {
						extended_ring_ll128,
						{32212254720, 2048},
						{8321499136, 512},
						{871366656, 64},
						{456130560, 32},
						{198705152, 16},
						{TUNER_MAX_SIZE, 16}}}};
			set_regions (set, collType, G_N_ELEMENTS (regions), regions);
		}
		{
			collType = ncclFuncReduceScatter;

			Pt extended_ring_ll =
				extend_region((Pt){73924608, 1024},
						(Pt){209190912, 2048},
						(Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});
			Pt extended_ring_ll128 =
				extend_region((Pt){4294967296, 256},
							(Pt){8589934592, 512},
							(Pt){TUNER_MAX_SIZE, TUNER_MAX_RANKS});

			const Region regions[] = {
				{.algorithm = NCCL_ALGO_RING,
					.protocol = NCCL_PROTO_LL,
					.num_vertices = 11,
					.vertices = {
						{0, 16},
						{786432, 16},
						{1572864, 32},
						{2621440, 64},
						{4718592, 128},
						{17301504, 256},
						{35127296, 512},
						{73924608, 1024},
						{209190912, 2048},
						extended_ring_ll,
						{0, TUNER_MAX_RANKS}}},
				{.algorithm = NCCL_ALGO_RING,
					.protocol = NCCL_PROTO_LL128,
					.num_vertices = 15,
					.vertices = {
						extended_ring_ll,
						{209190912, 2048},
						{73924608, 1024},
						{35127296, 512},
						{17301504, 256},
						{4718592, 128},
						{2621440, 64},
						{1572864, 32},
						{786432, 16},
						{219676672, 16},
						{508559360, 32},
						{592445440, 64},
						{4294967296, 256},
						{8589934592, 512},
						extended_ring_ll128}},
				{.algorithm = NCCL_ALGO_RING,
					.protocol = NCCL_PROTO_SIMPLE,
					.num_vertices = 7,
					.vertices = {
						extended_ring_ll128,
						{8589934592, 512},
						{4294967296, 256},
						{592445440, 64},
						{508559360, 32},
						{219676672, 16},
						{TUNER_MAX_SIZE, 16}}}};
			set_regions (set, collType, G_N_ELEMENTS (regions), regions);
		}
	} else if (nRanks == nNodes) {
		{
			collType = ncclFuncAllReduce;
			const Region regions[] = {
				{.algorithm = NCCL_ALGO_TREE,
				 .protocol = NCCL_PROTO_LL,
				 .num_vertices = 5,
				 .vertices = {{0, 2},
						{32768, 2},
						{32768, 128},
						{32768, 131072},
						{0, 131072},}},
				{.algorithm = NCCL_ALGO_TREE,
				 .protocol = NCCL_PROTO_LL128,
				 .num_vertices = 6,
				 .vertices = {{32768, 2},
						{131072, 2},
						{8388608, 128},
						{8589934592, 131072},
						{32768, 131072},
						{32768, 128},}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_LL128,
				 .num_vertices = 8,
				 .vertices = {{131072, 2},
						{3145728, 2},
						{297795584, 128},
						{107374182400, 45916},
						{107374182400, 59831},
						{164626432, 128},
						{20971520, 48},
						{3145728, 48},}},
				{.algorithm = NCCL_ALGO_TREE,
				 .protocol = NCCL_PROTO_SIMPLE,
				 .num_vertices = 6,
				 .vertices = {{3145728, 48},
						{20971520, 48},
						{164626432, 128},
						{107374182400, 59831},
						{107374182400, 131072},
						{8589934592, 131072},}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_SIMPLE,
				 .num_vertices = 4,
				 .vertices = {{3145728, 2},
						{107374182400, 2},
						{107374182400, 45916},
						{297795584, 128},}}};
			set_regions (set, collType, G_N_ELEMENTS (regions), regions);
		}
		{
			collType = ncclFuncAllGather;
			const Region regions[] = {
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_LL,
				 .num_vertices = 3,
				 .vertices = {{0, 2},
						{65536, 2},
						{65536, 4},}},
				{.algorithm = NCCL_ALGO_PAT,
				 .protocol = NCCL_PROTO_SIMPLE,
				 .num_vertices = 9,
				 .vertices = {{0, 2},
						{65536, 4},
						{1048576, 4},
						{4194305, 16},
						{12582912, 48},
						{88080384, 48},
						{248512512, 128},
						{34359738368, 17137},
						{0, 131072},}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_LL128,
				 .num_vertices = 12,
				 .vertices = {{65536, 2},
						{2097152, 2},
						{16777216, 8},
						{291504128, 128},
						{34359738368, 15008},
						{34359738368, 17137},
						{248512512, 128},
						{88080384, 48},
						{12582912, 48},
						{4194305, 16},
						{1048576, 4},
						{65536, 4},}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_SIMPLE,
				 .num_vertices = 5,
				 .vertices = {{2097152, 2},
						{34359738368, 2},
						{34359738368, 15008},
						{291504128, 128},
						{16777216, 8},}}};
			set_regions (set, collType, G_N_ELEMENTS (regions), regions);
		}
		{
			collType = ncclFuncReduceScatter;
			const Region regions[] = {
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_LL,
				 .num_vertices = 3,
				 .vertices = {{0, 2},
						{65536, 2},
						{65536, 4},}},
				{.algorithm = NCCL_ALGO_PAT,
				 .protocol = NCCL_PROTO_SIMPLE,
				 .num_vertices = 9,
				 .vertices = {{0, 2},
						{65536, 4},
						{1048576, 4},
						{3345192, 8},
						{19065019, 16},
						{67108864, 48},
						{106954752, 48},
						{274877906944, 121928},
						{0, 131072},}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_LL128,
				 .num_vertices = 9,
				 .vertices = {{65536, 2},
						{2097152, 2},
						{16777216, 8},
						{106954752, 48},
						{67108864, 48},
						{19065019, 16},
						{3345192, 8},
						{1048576, 4},
						{65536, 4},}},
				{.algorithm = NCCL_ALGO_RING,
				 .protocol = NCCL_PROTO_SIMPLE,
				 .num_vertices = 5,
				 .vertices = {{2097152, 2},
						{274877906944, 2},
						{274877906944, 121928},
						{106954752, 48},
						{16777216, 8},}}};
			set_regions (set, collType, G_N_ELEMENTS (regions), regions);
		}
	}
}
/* clang-format on */

/* ---- choice ------------------------------------------------------------------------------ */

/* NULL-terminated, indexed by HwCollectiveTuner (sim_text_lookup's table). */
static const char *const tuner_names[] = {
  [HW_TUNER_NCCL] = "nccl",
  [HW_TUNER_AWS_OFI_P5EN] = "aws-ofi-p5en",
  [HW_TUNER_AWS_OFI_P6_B200] = "aws-ofi-p6-b200",
  NULL,
};

const char *
hw_collective_tuner_name (HwCollectiveTuner tuner)
{
  g_return_val_if_fail ((guint) tuner < G_N_ELEMENTS (tuner_names) - 1, "?");
  return tuner_names[tuner];
}

gboolean
hw_collective_tuner_from_string (const char *text, HwCollectiveTuner *out, GError **error)
{
  int v;
  if (!sim_text_lookup (tuner_names, "collective tuner", text, &v, error))
    return FALSE;
  *out = (HwCollectiveTuner) v;
  return TRUE;
}

guint
hw_tuner_regions_at (HwCollectiveTuner tuner, HwCollectiveKind kind, guint n_ranks,
                     guint n_nodes, double bytes, HwTunerPick *out, guint max)
{
  int coll = kind == HW_COLLECTIVE_ALL_REDUCE       ? ncclFuncAllReduce
             : kind == HW_COLLECTIVE_ALL_GATHER     ? ncclFuncAllGather
             : kind == HW_COLLECTIVE_REDUCE_SCATTER ? ncclFuncReduceScatter
                                                    : -1;
  if (tuner == HW_TUNER_NCCL || coll < 0 || n_nodes <= 2 || bytes < 1)
    return 0;
  RegionSet set;
  memset (&set, 0, sizeof set);
  if (tuner == HW_TUNER_AWS_OFI_P5EN)
    regions_p5en (&set, n_ranks, n_nodes);
  else
    regions_p6 (&set, n_ranks, n_nodes);
  Pt p = to_log2 ((Pt){ floor (bytes), n_ranks });
  guint k = 0;
  for (size_t i = 0; i < set.num_regions[coll] && k < max; i++)
    {
      const Region *r = &set.regions[coll][i];
      if (is_inside_region (p, r) < 0)
        continue;
      out[k].algorithm = r->algorithm == NCCL_ALGO_TREE   ? HW_TUNER_TREE
                         : r->algorithm == NCCL_ALGO_RING ? HW_TUNER_RING
                         : r->algorithm == NCCL_ALGO_PAT  ? HW_TUNER_PAT
                                                          : HW_TUNER_NVLS_TREE;
      out[k].protocol = (HwCollectiveProtocol) r->protocol;
      k++;
    }
  return k;
}
