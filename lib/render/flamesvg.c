// SPDX-License-Identifier: MIT
/*
 * A standalone interactive SVG flame graph: one <g> per frame with its
 * position in weight units (data-x, data-w) and depth (data-d), so the
 * inline script can zoom without recomputing the layout; hover details,
 * click to zoom, search with highlight and reset. No external reference of
 * any kind: the file opens offline.
 *
 * Layout: paths arrive sorted (a flame graph) or in time order (a flame
 * chart); frames equal to those of the previous path at the same depth are
 * merged, so both views come from one walk.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "flame.h"
#include "sp.h"

#define FRAME_H		16
#define FONT_SIZE	12
#define FONT_W		0.59
#define PAD		10
#define TOP		84	/* title, subtitle, one footer line, controls */
#define LINE_H		15
#define BOTTOM		30	/* details line */
#define MIN_WIDTH_PX	0.1

struct open {
	uint32_t name;
	uint64_t x;		/* in weight units */
	uint64_t w[2];
};

struct svg {
	const struct sp_folded *f;
	const struct sp_svg_opts *o;
	FILE *out;
	uint64_t total[2];
	unsigned int col;	/* the column that gives widths */
	double scale;		/* px per weight unit */
	unsigned int maxdepth;
	unsigned int height;
	unsigned int top;	/* y of the frames' area */
	double maxdelta;	/* diff: largest |share change| of a frame */
	bool pass_emit;		/* false: measuring pass */
};

/* XML text: the text form of the first max bytes of str (escape.h), markup
 * escaped; max is cut back to a whole character. */
static void put_xml(FILE *out, const char *str, size_t max)
{
	size_t n = strlen(str);

	sp_esc_xml_put(out, str, sp_utf8_cut(str, n, max), 0);
}

/*
 * The bits that choose a frame's colour from its name (32-bit FNV-1a). Its
 * values are in every SVG: a name keeps its colour from one graph to the
 * next, and from one version of sp-flame to the next. A colour function,
 * not a table hash (those are hashmap.h's): never change it.
 */
static uint32_t color_bits(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

void sp_flame_color(const char *name, unsigned int kind, char *buf, size_t len)
{
	uint32_t h = color_bits(name);
	double v1 = (h & 0xff) / 255.0, v2 = ((h >> 8) & 0xff) / 255.0;
	double v3 = ((h >> 16) & 0xff) / 255.0;
	int r, g, b;

	switch (kind) {
	case SP_FN_KERNEL:
		r = 200 + 55 * v3, g = 110 + 60 * v1, b = 20 * v2;
		break;
	case SP_FN_INLINE:
		r = 215 + 40 * v3, g = 180 + 50 * v1, b = 40 + 40 * v2;
		break;
	case SP_FN_INTERP:
		r = 50 + 60 * v3, g = 165 + 60 * v1, b = 165 + 60 * v2;
		break;
	case SP_FN_JIT:
		r = 50 + 60 * v3, g = 190 + 60 * v1, b = 50 + 60 * v2;
		break;
	case SP_FN_UNKNOWN:
	case SP_FN_NOSTACK:
		r = g = b = 170 + 30 * v1;
		break;
	case SP_FN_PROCESS:
	case SP_FN_THREAD:
		r = 160 + 40 * v3, g = 130 + 40 * v1, b = 215 + 40 * v2;
		break;
	case SP_FN_SPAN:
		r = 80 + 50 * v3, g = 140 + 50 * v1, b = 215 + 40 * v2;
		break;
	default:	/* "hot", as flame graphs have always been */
		r = 205 + 50 * v3, g = 230 * v1, b = 55 * v2;
		break;
	}
	snprintf(buf, len, "rgb(%d,%d,%d)", r, g, b);
}

static void diff_color(const struct svg *s, const struct open *fr, char *buf, size_t len)
{
	double a = s->total[0] ? (double)fr->w[0] / s->total[0] : 0;
	double b = s->total[1] ? (double)fr->w[1] / s->total[1] : 0;
	double i = s->maxdelta > 0 ? fabs(b - a) / s->maxdelta : 0;
	int c = (int)(255 * (1 - i) + 0.5);

	if (b > a)
		snprintf(buf, len, "rgb(255,%d,%d)", c, c);
	else if (b < a)
		snprintf(buf, len, "rgb(%d,%d,255)", c, c);
	else
		snprintf(buf, len, "rgb(255,255,255)");
}

static void fmt_count(char *buf, size_t len, uint64_t v)
{
	char tmp[32];
	int n, i, o = 0;

	n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v);
	for (i = 0; i < n && (size_t)o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = '\0';
}

static void emit(struct svg *s, const struct open *fr, unsigned int depth)
{
	uint64_t w = fr->w[s->col];
	double x = PAD + fr->x * s->scale, width = w * s->scale, y;
	unsigned int kind, chars;
	const char *name = sp_folded_name(s->f, fr->name, &kind);
	char color[32], cnt[40], label[1024];
	size_t nlen;

	if (!s->pass_emit) {
		double a = s->total[0] ? (double)fr->w[0] / s->total[0] : 0;
		double b = s->total[1] ? (double)fr->w[1] / s->total[1] : 0;

		if (depth + 1 > s->maxdepth && width >= MIN_WIDTH_PX)
			s->maxdepth = depth + 1;
		if (fabs(b - a) > s->maxdelta)
			s->maxdelta = fabs(b - a);
		return;
	}
	if (width < MIN_WIDTH_PX)
		return;
	if (s->o->inverted)
		y = s->top + depth * FRAME_H;
	else
		y = s->height - BOTTOM - (depth + 1) * FRAME_H;
	if (s->o->diff)
		diff_color(s, fr, color, sizeof(color));
	else
		sp_flame_color(name, kind, color, sizeof(color));
	fprintf(s->out, "<g class=\"f\" data-x=\"%" PRIu64 "\" data-w=\"%" PRIu64 "\" data-d=\"%u\">"
		"<title>", fr->x, w, depth);
	put_xml(s->out, name, SIZE_MAX);
	fmt_count(cnt, sizeof(cnt), w);
	if (s->o->diff) {
		double a = s->total[0] ? 100.0 * fr->w[0] / s->total[0] : 0;
		double b = s->total[1] ? 100.0 * fr->w[1] / s->total[1] : 0;

		fprintf(s->out, " (%s %s, %.2f%%; base %.2f%%, %+.2f points)", cnt,
			s->o->unit, b, a, b - a);
	} else {
		fprintf(s->out, " (%s %s, %.2f%%)", cnt, s->o->unit,
			s->total[s->col] ? 100.0 * w / s->total[s->col] : 0);
	}
	fprintf(s->out, "</title><rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%d\" "
		"fill=\"%s\" rx=\"2\" ry=\"2\"/><text x=\"%.1f\" y=\"%.1f\">", x, y, width,
		FRAME_H - 1, color, x + 3, y + FRAME_H - 4.5);
	chars = width / (FONT_SIZE * FONT_W);
	if (chars >= 3) {
		/* the label: the text form, cut to fit (whole characters and
		 * escapes, by sp_esc_text()) */
		nlen = sp_esc_text(label, chars - 1 < sizeof(label) ? chars - 1 : sizeof(label),
				   name, strlen(name), 0);
		if (nlen <= chars) {
			put_xml(s->out, name, SIZE_MAX);
		} else {
			sp_esc_xml_put(s->out, label, strlen(label), SP_ESC_EXACT);
			fputs("..", s->out);
		}
	}
	fputs("</text></g>\n", s->out);
}

/* One walk over the paths: frames close when the next path leaves them. */
static void walk(struct svg *s, const struct sp_flame_paths *p)
{
	struct open *st = NULL;
	size_t cap = 0, n = 0, i;
	uint64_t x = 0;
	uint32_t d, c;

	for (i = 0; i < p->n; i++) {
		const struct sp_flame_path *q = &p->v[i];

		if (!q->w[s->col] && !(s->o->diff && q->w[0]))
			continue;
		for (c = 0; c < n && c < q->depth && st[c].name == q->names[c]; c++)
			;
		while (n > c) {
			n--;
			emit(s, &st[n], n);
		}
		sp_grow(&st, &cap, q->depth + 1, sizeof(*st));
		for (d = c; d < q->depth; d++) {
			st[d].name = q->names[d];
			st[d].x = x;
			st[d].w[0] = st[d].w[1] = 0;
		}
		n = q->depth;
		for (d = 0; d < n; d++) {
			st[d].w[0] += q->w[0];
			st[d].w[1] += q->w[1];
		}
		x += q->w[s->col];
	}
	while (n > 0) {
		n--;
		emit(s, &st[n], n);
	}
	free(st);
}

static const char script[] =
"<script type=\"text/ecmascript\"><![CDATA[\n"
"'use strict';\n"
"var W, total, fh, inverted, frames, details, matchedtxt, unzoombtn, searchbtn, searching = null;\n"
"function num(g, a) { return +g.getAttribute('data-' + a); }\n"
"function init(evt) {\n"
"  var svg = document.documentElement;\n"
"  W = +svg.getAttribute('data-width'); total = +svg.getAttribute('data-total');\n"
"  frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
"  details = document.getElementById('details');\n"
"  matchedtxt = document.getElementById('matched');\n"
"  unzoombtn = document.getElementById('unzoom');\n"
"  searchbtn = document.getElementById('search');\n"
"  frames.forEach(function (g) {\n"
"    g.addEventListener('mouseover', function () { details.textContent = g.firstChild.textContent; });\n"
"    g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
"    g.addEventListener('click', function () { zoom(g); });\n"
"  });\n"
"  unzoombtn.addEventListener('click', unzoom);\n"
"  searchbtn.addEventListener('click', function () { searching ? resetSearch() : search(); });\n"
"  window.addEventListener('keydown', function (e) {\n"
"    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); search(); }\n"
"    else if (e.key === 'Escape') { resetSearch(); unzoom(); }\n"
"  });\n"
"  document.querySelector('.ready').textContent = frames.length + ' frames';\n"
"  /* #zoom=NAME and #search=REGEX (URI-encoded) make shareable views. */\n"
"  decodeURIComponent(location.hash.substr(1)).split('&').forEach(function (kv) {\n"
"    var i = kv.indexOf('='), k = kv.substr(0, i), v = kv.substr(i + 1);\n"
"    if (k === 'zoom') {\n"
"      var g = frames.filter(function (g) { return nameOf(g) === v; })[0];\n"
"      if (g) zoom(g);\n"
"    } else if (k === 'search' && v) {\n"
"      search(v);\n"
"    }\n"
"  });\n"
"}\n"
"function nameOf(g) { return g.firstChild.textContent.replace(/ \\([^()]*\\)$/, ''); }\n"
"function label(g) {\n"
"  var r = g.querySelector('rect'), t = g.querySelector('text');\n"
"  var name = nameOf(g);\n"
"  var w = +r.getAttribute('width'), n = Math.floor(w / (12 * 0.59));\n"
"  t.setAttribute('x', +r.getAttribute('x') + 3);\n"
"  t.textContent = n < 3 ? '' : name.length <= n ? name : name.substr(0, n - 2) + '..';\n"
"}\n"
"function place(g, x0, w0) {\n"
"  var x = num(g, 'x'), w = num(g, 'w'), r = g.querySelector('rect');\n"
"  var scale = (W - 20) / w0, nw = w * scale;\n"
"  r.setAttribute('x', 10 + (x - x0) * scale); r.setAttribute('width', nw);\n"
"  g.style.display = nw < 0.1 ? 'none' : ''; label(g);\n"
"}\n"
"function zoom(target) {\n"
"  var x0 = num(target, 'x'), w0 = num(target, 'w'), d0 = num(target, 'd');\n"
"  frames.forEach(function (g) {\n"
"    var x = num(g, 'x'), w = num(g, 'w'), d = num(g, 'd');\n"
"    g.classList.remove('parent');\n"
"    if (d < d0 && x <= x0 && x + w >= x0 + w0) {\n"
"      var r = g.querySelector('rect');\n"
"      r.setAttribute('x', 10); r.setAttribute('width', W - 20);\n"
"      g.style.display = ''; g.classList.add('parent'); label(g);\n"
"    } else if (d >= d0 && x >= x0 && x + w <= x0 + w0) {\n"
"      place(g, x0, w0);\n"
"    } else {\n"
"      g.style.display = 'none';\n"
"    }\n"
"  });\n"
"  unzoombtn.classList.remove('hide');\n"
"  if (searching) search(searching);\n"
"}\n"
"function unzoom() {\n"
"  frames.forEach(function (g) { g.classList.remove('parent'); place(g, 0, total); });\n"
"  unzoombtn.classList.add('hide');\n"
"  if (searching) search(searching);\n"
"}\n"
"function resetSearch() {\n"
"  frames.forEach(function (g) {\n"
"    var r = g.querySelector('rect');\n"
"    if (r.hasAttribute('data-fill')) { r.setAttribute('fill', r.getAttribute('data-fill')); r.removeAttribute('data-fill'); }\n"
"  });\n"
"  searching = null; matchedtxt.textContent = ' '; searchbtn.textContent = 'Search';\n"
"}\n"
"function search(term) {\n"
"  if (term === undefined) term = window.prompt('Search for (regular expression):', '');\n"
"  if (!term) return;\n"
"  var re;\n"
"  try { re = new RegExp(term); } catch (e) { matchedtxt.textContent = 'bad expression'; return; }\n"
"  resetSearch(); searching = term;\n"
"  var hits = [];\n"
"  frames.forEach(function (g) {\n"
"    if (!re.test(nameOf(g))) return;\n"
"    var r = g.querySelector('rect');\n"
"    r.setAttribute('data-fill', r.getAttribute('fill')); r.setAttribute('fill', 'rgb(230,0,230)');\n"
"    hits.push([num(g, 'x'), num(g, 'w')]);\n"
"  });\n"
"  hits.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
"  var sum = 0, end = -1;\n"
"  hits.forEach(function (h) { if (h[0] >= end) { sum += h[1]; end = h[0] + h[1]; } });\n"
"  matchedtxt.textContent = 'Matched: ' + (total ? (100 * sum / total).toFixed(1) : '0') + '%';\n"
"  searchbtn.textContent = 'Reset Search';\n"
"}\n"
"]]></script>\n";

static const char style[] =
"<style type=\"text/css\">\n"
"text { font-family: Verdana, sans-serif; font-size: 12px; fill: rgb(0,0,0); }\n"
"#title { font-size: 17px; text-anchor: middle; }\n"
".sub { font-size: 12px; text-anchor: middle; fill: rgb(80,80,80); }\n"
".warn { fill: rgb(160,40,0); }\n"
".btn { cursor: pointer; fill: rgb(40,40,160); }\n"
".hide { display: none; }\n"
"g.f:hover rect { stroke: black; stroke-width: 0.5; cursor: pointer; }\n"
"g.f text { pointer-events: none; font-size: 12px; }\n"
"g.parent rect { opacity: 0.5; }\n"
".ready { fill: rgb(160,160,160); font-size: 10px; }\n"
"</style>\n";

int sp_flame_svg(const struct sp_folded *f, const struct sp_flame_paths *p,
		 const struct sp_svg_opts *o, FILE *out)
{
	struct sp_svg_opts opts = *o;
	struct svg s = { .f = f, .o = &opts, .out = out };
	unsigned int width = o->width ? o->width : 1200;
	const char *title = o->title, *p0, *semi;
	unsigned int nfoot, i;

	if (!opts.unit)
		opts.unit = "samples";
	if (!title)
		title = o->diff ? "Differential Flame Graph" : o->flamechart ? "Flame Chart" :
			o->inverted ? "Icicle Graph" : "Flame Graph";
	s.total[0] = p->total[0];
	s.total[1] = p->total[1];
	s.col = o->diff ? 1 : 0;
	s.scale = s.total[s.col] ? (double)(width - 2 * PAD) / s.total[s.col] : 0;
	walk(&s, p);		/* measure: depth and largest change */
	/* The footer's parts ("; "-separated) each get a line of their own. */
	nfoot = 0;
	for (p0 = o->footer; p0 && *p0; p0 = strstr(p0, "; ") ? strstr(p0, "; ") + 2 : "")
		nfoot++;
	s.top = TOP + (nfoot > 1 ? (nfoot - 1) * LINE_H : 0);
	s.height = s.top + s.maxdepth * FRAME_H + BOTTOM + 10;
	s.pass_emit = true;

	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		"onload=\"init(evt)\" xmlns=\"http://www.w3.org/2000/svg\" "
		"data-width=\"%u\" data-total=\"%" PRIu64 "\">\n", width, s.height, width, s.height,
		width, s.total[s.col]);
	fputs(style, out);
	fputs(script, out);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"rgb(248,248,240)\"/>\n",
		width, s.height);
	fprintf(out, "<text id=\"title\" x=\"%u\" y=\"24\">", width / 2);
	put_xml(out, title, SIZE_MAX);
	fputs("</text>\n", out);
	if (o->subtitle && *o->subtitle) {
		fprintf(out, "<text id=\"subtitle\" class=\"sub\" x=\"%u\" y=\"42\">", width / 2);
		put_xml(out, o->subtitle, SIZE_MAX);
		fputs("</text>\n", out);
	}
	if (o->footer && *o->footer) {
		fprintf(out, "<text id=\"footer\" class=\"sub%s\" x=\"%u\" y=\"58\">",
			strstr(o->footer, "hint:") ? " warn" : "", width / 2);
		for (p0 = o->footer, i = 0; *p0; i++) {
			semi = strstr(p0, "; ");
			fprintf(out, "<tspan x=\"%u\" dy=\"%d\">", width / 2, i ? LINE_H : 0);
			put_xml(out, p0, semi ? (size_t)(semi - p0 + 1) : SIZE_MAX);
			fputs("</tspan>", out);
			p0 = semi ? semi + 2 : "";
		}
		fputs("</text>\n", out);
	}
	fprintf(out, "<text id=\"unzoom\" class=\"btn hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n"
		"<text id=\"search\" class=\"btn\" x=\"%u\" y=\"24\" text-anchor=\"end\">Search</text>\n"
		"<text class=\"ready\" x=\"%u\" y=\"%u\" text-anchor=\"end\">%s</text>\n"
		"<text id=\"matched\" x=\"%u\" y=\"%u\" text-anchor=\"end\"> </text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n",
		PAD, width - PAD, width - PAD, s.top - 8,
		o->flamechart ? "time order" : "sorted by name",
		width - PAD, s.height - 12, PAD, s.height - 12);
	if (!p->n || !s.total[s.col])
		fprintf(out, "<text class=\"sub\" x=\"%u\" y=\"%u\">no samples</text>\n", width / 2,
			s.top + 20);
	fputs("<g id=\"frames\">\n", out);
	walk(&s, p);
	fputs("</g>\n</svg>\n", out);
	return ferror(out) ? -1 : 0;
}
