"""Figures: raster images and clustered vector drawings matched to their captions, cropped to PNG."""

from __future__ import annotations

import pymupdf

from papervault.parse.layout import Block, Rect, inside, overlap_x, union

MAX_GRAPHICS = 400          # beyond this many images/drawing clusters on a page, treat them as one region
CROP_DPI = 150


def bbox_log(page: pymupdf.Page) -> list:
    """MuPDF's list of (kind, bbox) of everything the page paints ("fill-path", "fill-image", ...), made in C;
    read once per page and shared by the table and figure passes. Empty when the page cannot be run."""
    try:
        return page.get_bboxlog()
    except Exception:
        return []


def graphic_regions(page: pymupdf.Page, warnings: list[str], pno: int, drawings: bool = True,
                    exclude: list[Rect] = (), log: list | None = None) -> list[tuple[Rect, str]]:
    """Rectangles holding images (and, if `drawings`, vector drawings) on a page, as (bbox, "raster" | "vector").

    Both come from the page's `bbox_log` (passed in as `log` when already read): several times faster than
    `get_drawings()`/`cluster_drawings()`, which build a Python object per path (seconds on a page of plots).
    Paths inside `exclude` (the tables found on the page) are left out, so a table's rules never glue a figure
    next to it, and the text between them, into one region.
    """
    if log is None:
        if not drawings and not page.get_images():  # reads the page's resources only: no page run
            return []
        log = bbox_log(page)
    prect = page.rect
    parea = prect.width * prect.height
    px0, py0, px1, py1 = prect
    images: list[Rect] = []
    paths: list[Rect] = []
    for kind, bbox in log:  # plain tuple arithmetic: a page of plots has thousands of paths
        is_image = kind in ("fill-image", "fill-imgmask")
        if not (is_image or drawings and kind in ("fill-path", "stroke-path", "fill-shade")):
            continue
        x0, y0, x1, y1 = max(bbox[0], px0), max(bbox[1], py0), min(bbox[2], px1), min(bbox[3], py1)
        if x1 <= x0 or y1 <= y0:
            continue
        if is_image:
            if x1 - x0 >= 4 and y1 - y0 >= 4:
                images.append((x0, y0, x1, y1))
        elif (x1 - x0) * (y1 - y0) < 0.5 * parea and not any(inside((x0, y0, x1, y1), t, tol=3) for t in exclude):
            # Whole-page fills and frames are backgrounds; they would glue every drawing into one cluster.
            paths.append((x0, y0, x1, y1))
    regions: list[tuple[Rect, str]] = []
    if len(images) > MAX_GRAPHICS:
        warnings.append(f"page {pno}: {len(images)} images; treated as one figure region")
        images = [union(images)]
    regions.extend((r, "raster") for r in _merge(images, gap=4))
    if drawings and paths:
        clusters = _merge(paths, gap=6)
        if len(clusters) > MAX_GRAPHICS:
            warnings.append(f"page {pno}: {len(clusters)} drawing clusters; treated as one figure region")
            clusters = [union(clusters)]
        for r in clusters:
            w, h = r[2] - r[0], r[3] - r[1]
            if w < 25 or h < 15:
                continue  # rules, underlines, table lines and footnote separators
            if w * h > 0.8 * parea:
                continue  # page frames and backgrounds
            regions.append((r, "vector"))
    return [(r, k) for r, k in regions if (r[2] - r[0]) * (r[3] - r[1]) < 0.9 * parea]


def _merge(rects: list[Rect], gap: float) -> list[Rect]:
    """Union rectangles that touch or nearly touch (tiles of one picture, the paths of one plot), to a fixpoint.

    A sweep over the rectangles sorted by their left edge keeps the work near-linear for the thousands of paths
    of a page of plots; merging repeats until no two results touch.
    """
    cur = [tuple(r) for r in rects]
    while True:
        cur.sort(key=lambda r: r[0])
        out: list[list[float]] = []
        active: list[list[float]] = []   # clusters whose right edge may still reach the next rectangle
        merged = False
        for r in cur:
            active = [o for o in active if o[2] + gap >= r[0]]
            for o in active:
                if r[1] <= o[3] + gap and r[3] >= o[1] - gap:
                    o[0], o[1], o[2], o[3] = min(o[0], r[0]), min(o[1], r[1]), max(o[2], r[2]), max(o[3], r[3])
                    merged = True
                    break
            else:
                o = list(r)
                out.append(o)
                active.append(o)
        cur = [tuple(o) for o in out]
        if not merged:
            return cur


def column_span(bbox: Rect, page_width: float, text_left: float, text_right: float) -> tuple[float, float]:
    """The horizontal extent of the column a caption sits in (the whole text width if it crosses the middle)."""
    mid = (text_left + text_right) / 2
    if bbox[2] <= mid + 5:
        return text_left, mid
    if bbox[0] >= mid - 5:
        return mid, text_right
    return text_left, text_right


def figure_region(caption: Block, regions: list[tuple[Rect, str]], blocks: list[Block],
                  col: tuple[float, float]) -> tuple[Rect, str] | None:
    """The graphics that belong to `caption`: the nearest above it in its column (else below), grown to
    take in neighbouring pieces, never past a paragraph of body text."""
    cb = caption.bbox
    band = (col[0] - 2, 0, col[1] + 2, 0)
    cands = [(r, k) for r, k in regions if overlap_x(r, band) > 0.5 * (r[2] - r[0])]
    body = [b for b in blocks if b is not caption and b.kind == "text" and len(b.text) > 120]

    def blocked(top: float, bottom: float) -> bool:
        return any(overlap_x(b.bbox, band) > 0 and b.bbox[1] >= top - 1 and b.bbox[3] <= bottom + 1 for b in body)

    above = [(r, k) for r, k in cands if r[3] <= cb[1] + 6 and not blocked(r[3], cb[1])]
    below = [(r, k) for r, k in cands if r[1] >= cb[3] - 6 and not blocked(cb[3], r[1])]
    for group, key in ((above, lambda rk: -rk[0][3]), (below, lambda rk: rk[0][1])):
        if not group:
            continue
        group.sort(key=key)
        rect, kind = group[0]
        kinds = {kind}
        for r, k in group[1:]:
            # Grow while the next piece is on the same side and no body paragraph separates it.
            lo, hi = (r[3], rect[1]) if r[3] <= rect[1] else (rect[3], r[1])
            if lo - 40 <= hi and not blocked(min(lo, hi), max(lo, hi)) or overlap_y_any(r, rect):
                rect = union([rect, r])
                kinds.add(k)
        # A figure whose caption sits in one column lies in that column: paths that stick out of it (white
        # backgrounds, clipped frames) must not pull the text of the next column into the figure.
        rect = (max(rect[0], col[0] - 6), rect[1], min(rect[2], col[1] + 6), rect[3])
        return rect, ("raster" if "raster" in kinds else "vector")
    return None


def overlap_y_any(a: Rect, b: Rect) -> bool:
    return min(a[3], b[3]) - max(a[1], b[1]) > 0


def crop_png(page: pymupdf.Page, rect: Rect, dpi: int = CROP_DPI) -> bytes:
    """PNG bytes of `rect` (grown by a small margin), rendered from the page."""
    r = pymupdf.Rect(rect)
    r = pymupdf.Rect(r.x0 - 3, r.y0 - 3, r.x1 + 3, r.y1 + 3) & page.rect
    # Very large crops are rendered at a lower resolution, so one huge figure stays a small file.
    area_in2 = r.width * r.height / (72 * 72)
    if area_in2 * dpi * dpi > 6_000_000:
        dpi = max(60, int((6_000_000 / max(area_in2, 1e-6)) ** 0.5))
    return page.get_pixmap(clip=r, dpi=dpi).tobytes("png")


def blocks_inside(rect: Rect, blocks: list[Block]) -> list[Block]:
    """Text blocks lying within a figure (labels, axis ticks, legends).

    A paragraph of running text is never one of them, even inside the rectangle: a region that grew too large
    may then show some text twice, but never loses a paragraph."""
    return [b for b in blocks if b.kind == "text" and inside(b.bbox, rect, tol=4) and not _running_text(b)]


def _running_text(b: Block) -> bool:
    return len(b.lines) >= 4 and len(b.text) > 300 and sum(c.isalpha() or c == " " for c in b.text) > 0.8 * len(b.text)
