package trafficmanager

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
)

// Sample is one observation of a data center: CPU utilisation (ratio) and
// the p95 of its service-level indicator (request latency, ms) at that time.
type Sample struct {
	CPU float64
	SLI float64
}

// LearnConfig says how to learn a maximum threshold.
type LearnConfig struct {
	// SLO is the SLI value not to exceed. Default 20 (ms).
	SLO float64
	// Degree of the fit: 2 (quadratic, the default) or 1 (linear).
	Degree int
	// MinR2 is the fit quality below which the static threshold is kept.
	// Default 0.6.
	MinR2 float64
	// MinSamples after outlier cleaning. Default 20.
	MinSamples int
}

// Learnt is a maximum threshold learnt from history, or why not.
type Learnt struct {
	// OK is false when the fit was too poor to use; Reason says why.
	OK     bool
	Reason string
	// Max is the CPU utilisation at which the fitted SLI reaches the SLO.
	Max float64
	// Coef are the fitted coefficients, constant term first.
	Coef []float64
	R2   float64
	// Used and Dropped count the samples kept and the outliers removed.
	Used, Dropped int
}

func (l Learnt) String() string {
	if !l.OK {
		return "poor fit: " + l.Reason
	}
	return fmt.Sprintf("max %s (R² %.3f, %d samples, %d outliers dropped)", pct(l.Max), l.R2, l.Used, l.Dropped)
}

// LearnMax fits the SLI against CPU by least squares, dropping outliers
// (residuals beyond 3.5 robust standard deviations, recomputed after each
// refit), and returns the CPU at which the fit reaches the SLO. The robust
// cleaning matters because SLI histories carry incidents that have nothing
// to do with CPU (a slow origin, a cable cut), and a handful of those pull a
// least-squares curve far off.
func LearnMax(samples []Sample, cfg LearnConfig) Learnt {
	if cfg.SLO == 0 {
		cfg.SLO = 20
	}
	if cfg.Degree == 0 {
		cfg.Degree = 2
	}
	if cfg.MinR2 == 0 {
		cfg.MinR2 = 0.6
	}
	if cfg.MinSamples == 0 {
		cfg.MinSamples = 20
	}
	pts := make([]Sample, 0, len(samples))
	for _, s := range samples {
		if !math.IsNaN(s.CPU) && !math.IsNaN(s.SLI) && !math.IsInf(s.SLI, 0) && s.CPU >= 0 && s.CPU <= 1 {
			pts = append(pts, s)
		}
	}
	l := Learnt{}
	if cfg.Degree != 1 && cfg.Degree != 2 {
		l.Reason = fmt.Sprintf("degree %d: want 1 or 2", cfg.Degree)
		return l
	}
	dropped := 0
	var coef []float64
	for round := 0; round < 5; round++ {
		if len(pts) < cfg.MinSamples {
			l.Reason = fmt.Sprintf("%d samples, want at least %d", len(pts), cfg.MinSamples)
			l.Dropped = dropped
			return l
		}
		var err error
		coef, err = fit(pts, cfg.Degree)
		if err != nil {
			l.Reason = err.Error()
			return l
		}
		res := make([]float64, len(pts))
		for i, s := range pts {
			res[i] = s.SLI - eval(coef, s.CPU)
		}
		sorted := append([]float64(nil), res...)
		sort.Float64s(sorted)
		med := stat.Quantile(0.5, stat.Empirical, sorted, nil)
		dev := make([]float64, len(res))
		for i, r := range res {
			dev[i] = math.Abs(r - med)
		}
		sort.Float64s(dev)
		sigma := 1.4826 * stat.Quantile(0.5, stat.Empirical, dev, nil)
		if sigma <= 0 {
			break
		}
		kept := pts[:0:0]
		for i, s := range pts {
			if math.Abs(res[i]-med) <= 3.5*sigma {
				kept = append(kept, s)
			}
		}
		if len(kept) == len(pts) {
			break
		}
		dropped += len(pts) - len(kept)
		pts = kept
	}
	l.Coef, l.Used, l.Dropped = coef, len(pts), dropped
	xs, ys, fs := make([]float64, len(pts)), make([]float64, len(pts)), make([]float64, len(pts))
	for i, s := range pts {
		xs[i], ys[i], fs[i] = s.CPU, s.SLI, eval(coef, s.CPU)
	}
	l.R2 = stat.RSquaredFrom(fs, ys, nil)
	if math.IsNaN(l.R2) || l.R2 < cfg.MinR2 {
		l.Reason = fmt.Sprintf("R² %.3f below %.2f", l.R2, cfg.MinR2)
		return l
	}
	x, ok := crossing(coef, cfg.SLO)
	if !ok {
		l.Reason = fmt.Sprintf("fitted SLI does not rise through %g between 0 and 100%% CPU", cfg.SLO)
		return l
	}
	l.OK, l.Max = true, x
	return l
}

// fit solves the least-squares polynomial of the given degree.
func fit(pts []Sample, degree int) ([]float64, error) {
	a := mat.NewDense(len(pts), degree+1, nil)
	b := mat.NewVecDense(len(pts), nil)
	for i, s := range pts {
		v := 1.0
		for j := 0; j <= degree; j++ {
			a.Set(i, j, v)
			v *= s.CPU
		}
		b.SetVec(i, s.SLI)
	}
	var qr mat.QR
	qr.Factorize(a)
	var x mat.VecDense
	if err := qr.SolveVecTo(&x, false, b); err != nil {
		return nil, fmt.Errorf("least squares: %w", err)
	}
	return x.RawVector().Data, nil
}

func eval(c []float64, x float64) float64 {
	y := 0.0
	for i := len(c) - 1; i >= 0; i-- {
		y = y*x + c[i]
	}
	return y
}

// crossing finds the lowest CPU in [0, 1] where the fit rises through slo.
func crossing(c []float64, slo float64) (float64, bool) {
	var roots []float64
	switch len(c) {
	case 2:
		if c[1] > 0 {
			roots = append(roots, (slo-c[0])/c[1])
		}
	case 3:
		a, b, cc := c[2], c[1], c[0]-slo
		if math.Abs(a) < 1e-12 {
			if b > 0 {
				roots = append(roots, -cc/b)
			}
			break
		}
		d := b*b - 4*a*cc
		if d < 0 {
			return 0, false
		}
		sq := math.Sqrt(d)
		roots = append(roots, (-b-sq)/(2*a), (-b+sq)/(2*a))
	}
	sort.Float64s(roots)
	for _, r := range roots {
		slope := c[1]
		if len(c) == 3 {
			slope += 2 * c[2] * r
		}
		if r >= 0 && r <= 1 && slope > 0 {
			return r, true
		}
	}
	return 0, false
}
