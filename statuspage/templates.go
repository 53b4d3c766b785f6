package statuspage

import "html/template"

const style = `<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
:root{--fire:#b3261e;--ok:#1b6e2e;--mute:#666}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d1d1d;background:#f6f6f4}
header{background:#1d2733;color:#fff;padding:10px 16px;display:flex;gap:12px;align-items:baseline;flex-wrap:wrap}
header a{color:#fff;text-decoration:none;font-weight:600}header small{color:#c9d1da}
main{padding:12px 16px;max-width:1200px;margin:auto}
h1{font-size:20px;margin:8px 0}h2{font-size:16px;margin:18px 0 6px}
table{border-collapse:collapse;width:100%;background:#fff}th,td{padding:6px 8px;border-bottom:1px solid #e2e2e2;text-align:left;vertical-align:top}
th{font-size:12px;color:var(--mute);font-weight:600}
.state{font-weight:600}.active .state{color:var(--fire)}.ended .state{color:var(--ok)}
.sev-critical{color:var(--fire);font-weight:600}.sev-warning{color:#9a5b00}
.muted{color:var(--mute);font-size:13px}figure{margin:0 0 12px;background:#fff;border:1px solid #e2e2e2}
#empty{padding:16px;background:#fff}
td{overflow-wrap:break-word}.n{white-space:nowrap}
/* A cell of figures is one line where the table has room; on a phone, a
   block as wide as the screen, it breaks between its phrases (span.n). */
.tag{display:inline-block;padding:1px 8px;border-radius:10px;background:#e8ecf1;font-size:13px;margin-right:4px}
.facts{background:#fff;padding:8px 12px;border:1px solid #e2e2e2}.facts p{margin:4px 0}
.links a{margin-right:8px;font-size:13px}.ranges a{margin-right:10px}.ranges a.on{font-weight:600;color:#1d1d1d;text-decoration:none}
section.incident{margin:0 0 28px}
@media (max-width:700px){
 thead{display:none}table,tbody,tr,td{display:block;width:auto}
 tr{margin:0 0 10px;border:1px solid #ddd;background:#fff}td{border:0;padding:3px 10px}
 td[data-l]::before{content:attr(data-l) ": ";color:var(--mute);font-size:12px}
 td.n{white-space:normal}
}
</style>`

// Style is the page's head: the viewport and the style sheet, which the
// report shares.
func Style() template.HTML { return template.HTML(style) }

var funcs = template.FuncMap{"style": Style}

var listTmpl = template.Must(template.New("list").Funcs(funcs).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} — outages</title>{{style}}</head><body>
<header><a href="./">{{.Title}}</a><small>outages now and ended in {{.RangeName}} · data time <span id="now">{{.Now.Format "2006-01-02 15:04 MST"}}</span></small></header>
<main>
<h1>Outages</h1>
<p class="ranges" id="ranges">Ended in: {{range .Ranges}}<a href="?range={{.Key}}"{{if .On}} class="on" aria-current="true"{{end}}>{{.Name}}</a>{{end}}</p>
<table id="incidents"><thead><tr><th>state</th><th>place</th><th>scope</th><th>worst change</th><th>networks</th><th>signals</th><th>start (UTC)</th><th>duration</th><th>severity</th><th>confidence</th><th>silenced</th></tr></thead>
<tbody>{{range .Rows}}<tr class="{{if .Active}}active{{else}}ended{{end}}" data-id="{{.ID}}">
<td class="state" data-l="state">{{if .Active}}ongoing{{else}}ended{{end}}</td>
<td data-l="place"><a href="incident/{{.ID}}">{{.Place}}</a></td>
<td data-l="scope">{{.ScopeS}}</td><td data-l="worst">{{.WorstS}}</td>
<td data-l="networks">{{.NetworksS}}</td><td data-l="signals">{{.SignalsS}}</td>
<td data-l="start">{{.StartS}}</td><td data-l="duration">{{.DurationS}}</td>
<td data-l="severity" class="sev-{{.Severity}}">{{.Severity}}</td><td data-l="confidence">{{.ConfidenceS}}</td>
<td data-l="silenced">{{if .Silenced}}yes{{else}}no{{end}}</td></tr>
{{end}}</tbody></table>
<p id="empty"{{if .Rows}} hidden{{end}}>No outage now or ended in {{.RangeName}}.</p>
<p class="muted" id="updated">Updates every 5 seconds.</p>
</main>
<script>
// Re-reads the list every few seconds; builds rows with textContent only.
(function(){
  const fmt = t => t.replace('T',' ').slice(0,16);
  function dur(s){const m=Math.round(s/60);if(m<60)return m+' min';const h=Math.floor(m/60),r=m%60;
    if(h<24)return r?h+' h '+r+' min':h+' h';const d=Math.floor(h/24),hh=h%24;return hh?d+' d '+hh+' h':d+' d';}
  function cell(tr,label,text,cls){const td=document.createElement('td');td.dataset.l=label;td.textContent=text;if(cls)td.className=cls;tr.appendChild(td);return td;}
  let last = null;
  async function refresh(){
    try{
      const r = await fetch('api/v1/incidents'+location.search,{cache:'no-store'});
      if(!r.ok) throw new Error('HTTP '+r.status);
      const body = await r.json();
      document.getElementById('now').textContent = fmt(body.now)+' UTC';
      document.getElementById('updated').textContent = 'Updated '+new Date().toLocaleTimeString()+'; updates every 5 seconds.';
      const key = JSON.stringify(body.incidents.map(i => [i.id, i.end, i.signals, i.networks, i.severity, i.silenced, i.worst, Math.floor(i.duration_s/60)]));
      if(key === last) return; // unchanged: keep the rows (and what the reader is pointing at)
      last = key;
      const tb = document.querySelector('#incidents tbody');
      tb.textContent='';
      for(const i of body.incidents){
        const tr=document.createElement('tr');const active=i.end===null;
        tr.className=active?'active':'ended';tr.dataset.id=i.id;
        cell(tr,'state',active?'ongoing':'ended','state');
        const a=document.createElement('a');a.href='incident/'+i.id;a.textContent=i.place;cell(tr,'place','').appendChild(a);
        cell(tr,'scope',[i.scope,i.type].filter(Boolean).join(' · '));cell(tr,'worst',i.worst||'');
        cell(tr,'networks',(i.networks||[]).join(', '));cell(tr,'signals',(i.signals_in_words||i.signals||[]).join(', '));
        cell(tr,'start',fmt(i.start));cell(tr,'duration',dur(i.duration_s));
        cell(tr,'severity',i.severity,'sev-'+i.severity);cell(tr,'confidence',Math.round(i.confidence*100)+' %');
        cell(tr,'silenced',i.silenced?'yes':'no');tb.appendChild(tr);
      }
      document.getElementById('empty').hidden = body.incidents.length>0;
    }catch(e){
      document.getElementById('updated').textContent = 'Could not update ('+e.message+'); retrying.';
    }
  }
  setInterval(refresh, 5000);
})();
</script>
</body></html>`))

var incidentTmpl = template.Must(template.New("incident").Funcs(funcs).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Row.Place}} — {{.Title}}</title>{{style}}</head><body>
<header><a href="../{{.Query}}">{{.Title}}</a><small>data time {{.Now.Format "2006-01-02 15:04 MST"}}</small></header>
<main>
<h1 id="place">{{.Row.Place}}</h1>
<p class="ranges" id="chart-ranges">Charts: {{range .Ranges}}<a href="?chart={{.Key}}"{{if .On}} class="on" aria-current="true"{{end}}>{{.Name}}</a>{{end}}</p>
{{.Body}}
</main></body></html>`))

// incidentFragment is one incident, for the page and the report alike.
var incidentFragment = template.Must(template.New("fragment").Parse(`{{define "figs"}}{{range $i, $p := .}}{{if $i}} {{end}}<span class="n">{{$p}}</span>{{end}}{{end}}<div class="facts">
<p class="{{if .Active}}active{{else}}ended{{end}}"><span class="state">{{if .Active}}ongoing{{else}}ended {{.EndS}} UTC{{end}}</span>
 · since {{.StartS}} UTC ({{.DurationS}}){{if .Scope}} · <span class="tag" data-k="scope">{{.Scope}}</span>{{end}}{{if .Type}}<span class="tag" data-k="type">{{.Type}}</span>{{end}}</p>
{{if .Title}}{{if ne .Title .Place}}<p>What: {{.Title}}</p>{{end}}{{end}}
<p>Severity <span class="sev-{{.Severity}}">{{.Severity}}</span> · confidence {{.Confidence}}{{if .Silenced}} · silenced{{end}}<br><span class="why">Why: {{.Why}}</span></p>
{{if .Cause}}<p class="cause">Likely cause: {{.Cause}}</p>{{end}}
{{if .PlaceLinks}}<p class="links">{{.Place}} elsewhere: {{range .PlaceLinks}}<a href="{{.URL}}" rel="external noopener noreferrer" target="_blank">{{.Name}}</a>{{end}}</p>{{end}}
</div>
{{if .Changes}}<h2>Worst change per signal</h2>
<table class="changes"><thead><tr><th>kind</th><th>signal</th><th>where</th><th>worst</th><th>at (UTC)</th><th>now</th><th>alerts</th></tr></thead><tbody>
{{range .Changes}}<tr data-kind="{{.Kind}}"><td data-l="kind">{{.Kind}}</td><td data-l="signal">{{.What}}</td><td data-l="where">{{.Where}}</td><td data-l="worst" class="n worst">{{template "figs" .Worst}}</td><td data-l="at" class="n">{{.WorstAt}}</td><td data-l="now">{{template "figs" .Now}}</td><td data-l="alerts">{{.Alerts}}</td></tr>
{{end}}</tbody></table>{{end}}
{{if .Nets}}<h2>Networks</h2>
<table class="networks"><thead><tr><th>network</th><th>share of traffic (the day before)</th>{{if .O.Links}}<th>elsewhere</th>{{end}}</tr></thead><tbody>
{{range .Nets}}<tr><td data-l="network">{{.Name}}</td><td data-l="share" class="share">{{.Share}}</td>{{if $.O.Links}}<td data-l="elsewhere" class="links">{{range .Links}}<a href="{{.URL}}" rel="external noopener noreferrer" target="_blank">{{.Name}}</a>{{end}}</td>{{end}}</tr>
{{end}}</tbody></table>{{end}}
{{with .Overlay}}<h2>Every signal, as a share of its baseline</h2>
<figure class="overlay" aria-label="{{.Title}}">{{.SVG}}</figure>{{end}}
{{if .Pages}}<h2>Pages sent</h2>
<table class="pages"><thead><tr><th>at (UTC)</th><th>page</th><th>severity</th><th>why: what changed</th><th>what it said</th></tr></thead><tbody>
{{range .Pages}}<tr><td data-l="at" class="n">{{.At}}</td><td data-l="page" class="n update">{{.Update}}</td><td data-l="severity" class="n sev-{{.Severity}}">{{.Severity}}{{if .Muted}} (muted: {{.Muted}}){{end}}</td><td data-l="why" class="changed">{{.Changed}}</td><td data-l="said">{{.Summary}}</td></tr>
{{end}}</tbody></table>{{end}}
<h2>Member alerts</h2>
<table class="alerts"><thead><tr><th>status</th><th>what</th><th>where</th><th>start – end (UTC)</th><th>worst</th><th>now</th><th>summary</th></tr></thead><tbody>
{{range .Members}}<tr><td data-l="status" class="{{if eq .Status "firing"}}sev-critical{{end}}">{{.Status}}</td>
<td data-l="what">{{.Detector}}<br><span class="muted">{{.Signal}}</span></td><td data-l="where">{{.Where}}</td>
<td data-l="when">{{.When}}</td><td data-l="worst" class="peak">{{template "figs" .Peak}}<br><span class="muted">{{.PeakAt}}</span></td><td data-l="now">{{template "figs" .Now}}</td><td data-l="summary">{{.Summary}}</td></tr>
{{end}}</tbody></table>
{{if .Muted}}<h2>Muted alerts of this place</h2>
<table class="muted-alerts"><thead><tr><th>status</th><th>what</th><th>where</th><th>start – end (UTC)</th><th>worst</th><th>why muted</th></tr></thead><tbody>
{{range .Muted}}<tr><td data-l="status">{{.Status}}</td><td data-l="what">{{.Detector}}<br><span class="muted">{{.Signal}}</span></td><td data-l="where">{{.Where}}</td>
<td data-l="when">{{.When}}</td><td data-l="worst">{{template "figs" .Peak}}</td><td data-l="why muted">{{.Muted}}</td></tr>
{{end}}</tbody></table>{{end}}
{{if .O.SignalCharts}}<h2>Each signal</h2>
{{range .Charts}}<figure class="signal" aria-label="{{.Title}}">{{.SVG}}</figure>
{{else}}<p class="muted">No data recorded for these series.</p>{{end}}{{if .ChartsOmitted}}<p class="muted">{{.ChartsOmitted}} more series not charted.</p>{{end}}{{end}}`))
