package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// implColors gives each implementation a color that stays the same across
// charts; packwheel's two wheels get the saturated ones.
var implColors = map[string]color.Color{
	"hashed":      color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"wheel":       color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	"list":        color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	"timer-reset": color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"afterfunc":   color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	"heap":        color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	// The peers, in muted tones.
	"gtimer":       color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
	"antlabs":      color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	"antlabs-heap": color.RGBA{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
	"timingwheel":  color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
	"go-zero":      color.RGBA{R: 0x39, G: 0x3b, B: 0x79, A: 0xff},
	"go-timewheel": color.RGBA{R: 0xad, G: 0x49, B: 0x4a, A: 0xff},
}

// implGlyphs gives each implementation a marker shape, so that the lines
// can be told apart without color.
var implGlyphs = map[string]draw.GlyphDrawer{
	"hashed":       draw.CircleGlyph{},
	"wheel":        draw.SquareGlyph{},
	"list":         draw.RingGlyph{},
	"timer-reset":  draw.TriangleGlyph{},
	"afterfunc":    draw.CrossGlyph{},
	"heap":         draw.PyramidGlyph{},
	"gtimer":       draw.PlusGlyph{},
	"antlabs":      draw.BoxGlyph{},
	"antlabs-heap": draw.RingGlyph{},
	"timingwheel":  draw.CircleGlyph{},
	"go-zero":      draw.TriangleGlyph{},
	"go-timewheel": draw.CrossGlyph{},
}

// sizeTicks marks the x axis at the measured sizes, labelled 10k, 1M, ...
type sizeTicks []int

func (t sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for _, n := range t {
		if x := float64(n); x >= lo && x <= hi {
			ticks = append(ticks, plot.Tick{Value: x, Label: sizeLabel(n)})
		}
	}
	return ticks
}

// ticks125 marks a log axis at 1, 2 and 5 times each power of ten, with
// unlabelled minor ticks between: plot.LogTicks labels powers of ten only,
// which leaves a one-decade axis with a single label.
type ticks125 struct{}

func (ticks125) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for decade := math.Pow10(int(math.Floor(math.Log10(lo)))); decade <= hi; decade *= 10 {
		for m := 1; m < 10; m++ {
			v := float64(m) * decade
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// drawChurn writes a log-log chart of churn ns/op against n, one line per
// implementation, to path (PNG).
func drawChurn(r results, path, subtitle string) error {
	p := plot.New()
	p.Title.Text = "Churn: re-arm a random timer 30 s ahead\n" + subtitle
	p.X.Label.Text = "outstanding timers (n)"
	p.Y.Label.Text = "ns per re-arm (median)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = sizeTicks(r.sizes("Churn"))
	p.Y.Tick.Marker = ticks125{}
	p.Add(plotter.NewGrid())
	// The legend has a column of its own at the right: over the plot, a
	// dozen entries covered the lines of the slowest implementations.
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	for _, impl := range implOrder {
		var pts plotter.XYs
		for _, n := range r.sizes("Churn") {
			if v, ok := r.get("Churn", impl, n, "ns/op"); ok {
				pts = append(pts, plotter.XY{X: float64(n), Y: v})
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("churn chart, %s: %w", impl, err)
		}
		line.Color, line.Width = implColors[impl], vg.Points(2)
		points.Color, points.Shape = implColors[impl], implGlyphs[impl]
		points.Radius = vg.Points(3.5)
		p.Add(line, points)
		legend.Add(impl, line, points)
	}
	p.Y.Max *= 1.3 // so that the top line's markers are not cut
	const width, legendWidth = 10 * vg.Inch, 1.8 * vg.Inch
	img := vgimg.New(width, 5*vg.Inch)
	dc := draw.New(img)
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	legend.Draw(draw.Crop(dc, width-legendWidth+vg.Points(10), 0, 0, -vg.Points(40)))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
