package eval

import (
	"fmt"
	"html"
	"html/template"
	"io"
	"strings"
	"time"
)

// ReportInfo is what an answer report says about its run.
type ReportInfo struct {
	Title  string
	Golden string // the golden set's path
	Corpus string
	Gates  []AnswerGate
	When   time.Time
}

// palette colours the configurations of a report, in order.
var palette = []string{"#3b6fb6", "#e0803a", "#4a9a5b", "#b54a5a", "#7a5cb0", "#8a6d3b", "#2f8f9d", "#c2577f"}

// WriteHTML writes a self-contained HTML report of answer runs: the mean
// of each metric per configuration as an inline SVG chart, the gates on
// the first configuration, and per question each configuration's scores,
// answer, passages and the judge's reasons. It loads nothing from the
// network.
func WriteHTML(w io.Writer, info ReportInfo, runs []*AnswerRun) error {
	if len(runs) == 0 {
		return fmt.Errorf("report: no runs")
	}
	if info.Title == "" {
		info.Title = "Quarry answer evaluation"
	}
	type gateRow struct {
		Gate  string
		Value float64
		Pass  bool
	}
	var gates []gateRow
	for _, g := range info.Gates {
		gates = append(gates, gateRow{g.String(), runs[0].Mean[g.Metric], g.Pass(runs[0].Mean)})
	}
	type cell struct {
		Run    string
		Color  string
		Scores []Score
		Case   CaseResult
	}
	type question struct {
		ID, Question, Reference string
		Sources                 []string
		Cells                   []cell
	}
	var qs []question
	for i, g := range runs[0].Cases {
		q := question{ID: g.Golden.ID, Question: g.Golden.Question, Reference: g.Golden.Reference, Sources: g.Golden.Sources}
		for r, run := range runs {
			if i >= len(run.Cases) {
				continue
			}
			c := cell{Run: run.Name, Color: palette[r%len(palette)], Case: run.Cases[i]}
			for _, m := range AnswerMetrics {
				c.Scores = append(c.Scores, run.Cases[i].Scores[m])
			}
			q.Cells = append(q.Cells, c)
		}
		qs = append(qs, q)
	}
	data := map[string]any{
		"Info": info, "Runs": runs, "Metrics": AnswerMetrics, "Gates": gates, "Questions": qs,
		"Chart": template.HTML(meanChart(runs)), "Judge": runs[0].Judge, "When": info.When.UTC().Format(time.RFC3339),
	}
	return reportTmpl.Execute(w, data)
}

// meanChart draws grouped bars: per metric, one bar per configuration.
func meanChart(runs []*AnswerRun) string {
	const barW, gap, groupGap, h, top, left = 22, 4, 36, 180, 20, 40
	groupW := len(runs)*(barW+gap) - gap
	width := left + len(AnswerMetrics)*(groupW+groupGap) + 20
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="mean score per metric and configuration">`, width, h+top+60)
	for i := 0; i <= 4; i++ {
		y := top + h - h*i/4
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#ddd"/><text x="%d" y="%d" font-size="11" text-anchor="end" fill="#666">%.2f</text>`,
			left, width-10, y, y, left-6, y+4, float64(i)/4)
	}
	for mi, m := range AnswerMetrics {
		x0 := left + 10 + mi*(groupW+groupGap)
		for ri, r := range runs {
			v := r.Mean[m]
			bh := int(v * h)
			x := x0 + ri*(barW+gap)
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s · %s: %.3f</title></rect>`,
				x, top+h-bh, barW, bh, palette[ri%len(palette)], html.EscapeString(r.Name), m, v)
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="9" text-anchor="middle" fill="#333">%.2f</text>`, x+barW/2, top+h-bh-3, v)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" text-anchor="middle">%s</text>`, x0+groupW/2, top+h+18, strings.ReplaceAll(m, "_", " "))
	}
	lx := left
	for ri, r := range runs {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" font-size="11">%s</text>`,
			lx, top+h+34, palette[ri%len(palette)], lx+14, top+h+43, html.EscapeString(r.Name))
		lx += 24 + 7*len(r.Name)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct":   func(v float64) string { return fmt.Sprintf("%.0f", v*100) },
	"f3":    func(v float64) string { return fmt.Sprintf("%.3f", v) },
	"label": func(s string) string { return strings.ReplaceAll(s, "_", " ") },
	"inc":   func(i int) int { return i + 1 },
	"relevant": func(src string, sources []string) bool {
		return len(sources) > 0 && SourceMatches(src, sources)
	},
	"trim": func(s string) string {
		if len(s) > 300 {
			return strings.ToValidUTF8(s[:300], "") + "…"
		}
		return s
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Info.Title}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#222}
h1{font-size:1.5rem;margin-bottom:.2rem}.meta{color:#666;margin-top:0}
table{border-collapse:collapse;margin:1rem 0}th,td{padding:.3rem .6rem;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.pass{color:#1d7a35;font-weight:600}.fail{color:#b3261e;font-weight:600}
.bar{display:inline-block;height:8px;background:#eee;width:80px;vertical-align:middle;border-radius:2px;overflow:hidden}
.bar i{display:block;height:8px}
details{border:1px solid #e4e4e4;border-radius:6px;margin:.6rem 0;padding:.4rem .8rem}
summary{cursor:pointer;font-weight:600}.answer{white-space:pre-wrap;background:#fafafa;padding:.5rem;border-radius:4px}
.passage{font-size:12px;color:#444;margin:.3rem 0;padding-left:.6rem;border-left:3px solid #ddd;white-space:pre-wrap}
.passage.rel{border-left-color:#4a9a5b}.reason{color:#666;font-size:12px}.err{color:#b3261e}
.swatch{display:inline-block;width:10px;height:10px;margin-right:4px}
</style></head><body>
<h1>{{.Info.Title}}</h1>
<p class="meta">Golden set {{.Info.Golden}}{{if .Info.Corpus}} over {{.Info.Corpus}}{{end}} · {{len .Questions}} questions · judge: {{.Judge}} · {{.When}}</p>
<h2>Mean scores</h2>
{{.Chart}}
<table><tr><th>configuration</th>{{range .Metrics}}<th>{{label .}}</th>{{end}}</tr>
{{range $i, $r := .Runs}}<tr><td>{{$r.Name}}</td>{{range $.Metrics}}<td class="num">{{f3 (index $r.Mean .)}}</td>{{end}}</tr>{{end}}
</table>
{{if .Gates}}<h2>Gates <small>(on {{(index .Runs 0).Name}})</small></h2><table>
{{range .Gates}}<tr><td>{{.Gate}}</td><td class="num">{{f3 .Value}}</td><td class="{{if .Pass}}pass">pass{{else}}fail">FAIL{{end}}</td></tr>{{end}}
</table>{{end}}
<h2>Questions</h2>
<table><tr><th>#</th><th>question</th><th>configuration</th>{{range .Metrics}}<th>{{label .}}</th>{{end}}</tr>
{{range .Questions}}{{$q := .}}{{range $i, $c := .Cells}}<tr>{{if eq $i 0}}<td rowspan="{{len $q.Cells}}">{{$q.ID}}</td><td rowspan="{{len $q.Cells}}">{{$q.Question}}</td>{{end}}
<td><span class="swatch" style="background:{{$c.Color}}"></span>{{$c.Run}}</td>
{{if $c.Case.Abstained}}{{range $c.Scores}}<td class="num">abstained</td>{{end}}{{else}}{{range $c.Scores}}<td class="num"><span class="bar"><i style="width:{{pct .Score}}%;background:{{$c.Color}}"></i></span> {{f3 .Score}}</td>{{end}}{{end}}</tr>{{end}}{{end}}
</table>
<h2>Detail</h2>
{{range .Questions}}{{$q := .}}<details><summary>{{.ID}} · {{.Question}}</summary>
<p><b>Reference:</b> {{.Reference}}{{if .Sources}}<br><b>Relevant sources:</b> {{range $i, $s := .Sources}}{{if $i}}, {{end}}{{$s}}{{end}}{{end}}</p>
{{range .Cells}}<h4><span class="swatch" style="background:{{.Color}}"></span>{{.Run}}</h4>
{{if .Case.Error}}<p class="err">{{.Case.Error}}</p>{{end}}
<div class="answer">{{.Case.Answer}}</div>
{{if .Case.Abstained}}<div class="reason">abstained (relevance {{f3 .Case.Relevance}}): not judged</div>{{else}}{{range $i, $s := .Scores}}<div class="reason">{{label (index $.Metrics $i)}} {{f3 $s.Score}}{{if $s.Reason}} — {{$s.Reason}}{{end}}</div>{{end}}{{end}}
{{range $i, $p := .Case.Passages}}<div class="passage{{if relevant $p.Source $q.Sources}} rel{{end}}"><b>[{{inc $i}}] {{$p.Source}}</b>
{{trim $p.Text}}</div>{{end}}
{{end}}</details>{{end}}
</body></html>
`))
