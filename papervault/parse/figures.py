"""Figures: raster images and clustered vector drawings matched to their captions, cropped to PNG."""

from __future__ import annotations

import pymupdf

from papervault.parse.layout import Block, Rect, inside, overlap_x, union

MAX_GRAPHICS = 400          # beyond this many images/drawing clusters on a page, treat them as one region
CROP_DPI = 150


def graphic_regions(page: pymupdf.Page, warnings: list[str], pno: int, drawings: bool = True) -> list[tuple[Rect, str]]:
    """Rectangles holding images (and, if `drawings`, vector drawings) on a page, as (bbox, "raster" | "vector")."""
    prect = page.rect
    parea = prect.width * prect.height
    regions: list[tuple[Rect, str]] = []
    try:
        # get_images() only reads the page's resources; get_image_info() has to run the page.
        infos = page.get_image_info() if page.get_images() else []
    except Exception:
        infos = []
    images = []
    for info in infos:
        r = pymupdf.Rect(info["bbox"]) & prect
        if r.is_empty or r.width < 4 or r.height < 4:
            continue
        images.append(tuple(r))
    if len(images) > MAX_GRAPHICS:
        warnings.append(f"page {pno}: {len(images)} images; treated as one figure region")
        images = [union(images)]
    regions.extend((r, "raster") for r in _merge(images, gap=4))
    if not drawings:
        return [(r, k) for r, k in regions if (r[2] - r[0]) * (r[3] - r[1]) < 0.9 * parea]
    try:
        # cluster_drawings groups the page's vector paths into rectangles of nearby drawings.
        clusters = page.cluster_drawings(x_tolerance=6, y_tolerance=6)
    except Exception:
        clusters = []
    if len(clusters) > MAX_GRAPHICS:
        warnings.append(f"page {pno}: {len(clusters)} drawing clusters; treated as one figure region")
        clusters = [pymupdf.Rect(union([tuple(c) for c in clusters]))]
    for c in clusters:
        r = pymupdf.Rect(c) & prect
        if r.is_empty or r.width < 25 or r.height < 15:
            continue  # rules, underlines, table lines and footnote separators
        if r.width * r.height > 0.8 * parea:
            continue  # page frames and backgrounds
        regions.append((tuple(r), "vector"))
    return [(r, k) for r, k in regions if (r[2] - r[0]) * (r[3] - r[1]) < 0.9 * parea]


def _merge(rects: list[Rect], gap: float) -> list[Rect]:
    """Union rectangles that touch or nearly touch (tiles of one picture)."""
    rects = sorted(rects, key=lambda r: (r[1], r[0]))
    out: list[list[float]] = []
    for r in rects:
        for o in out:
            if r[0] <= o[2] + gap and r[2] >= o[0] - gap and r[1] <= o[3] + gap and r[3] >= o[1] - gap:
                o[0], o[1], o[2], o[3] = min(o[0], r[0]), min(o[1], r[1]), max(o[2], r[2]), max(o[3], r[3])
                break
        else:
            out.append(list(r))
    return [tuple(o) for o in out]


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
    """Text blocks lying within a figure (labels, axis ticks, legends)."""
    return [b for b in blocks if b.kind == "text" and inside(b.bbox, rect, tol=4)]
