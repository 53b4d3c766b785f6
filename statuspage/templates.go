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
@media (max-width:700px){
 thead{display:none}table,tbody,tr,td{display:block;width:auto}
 tr{margin:0 0 10px;border:1px solid #ddd;background:#fff}td{border:0;padding:3px 10px}
 td[data-l]::before{content:attr(data-l) ": ";color:var(--mute);font-size:12px}
}
</style>`

var funcs = template.FuncMap{"style": func() template.HTML { return template.HTML(style) }}

var listTmpl = template.Must(template.New("list").Funcs(funcs).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} — outages</title>{{style}}</head><body>
<header><a href="./">{{.Title}}</a><small>outages now and in the last day · data time <span id="now">{{.Now.Format "2006-01-02 15:04 MST"}}</span></small></header>
<main>
<h1>Outages</h1>
<table id="incidents"><thead><tr><th>state</th><th>place</th><th>networks</th><th>signals</th><th>start (UTC)</th><th>duration</th><th>severity</th><th>confidence</th><th>silenced</th></tr></thead>
<tbody>{{range .Rows}}<tr class="{{if .Active}}active{{else}}ended{{end}}" data-id="{{.ID}}">
<td class="state" data-l="state">{{if .Active}}ongoing{{else}}ended{{end}}</td>
<td data-l="place"><a href="incident/{{.ID}}">{{.Place}}</a></td>
<td data-l="networks">{{.NetworksS}}</td><td data-l="signals">{{.SignalsS}}</td>
<td data-l="start">{{.StartS}}</td><td data-l="duration">{{.DurationS}}</td>
<td data-l="severity" class="sev-{{.Severity}}">{{.Severity}}</td><td data-l="confidence">{{.ConfidenceS}}</td>
<td data-l="silenced">{{if .Silenced}}yes{{else}}no{{end}}</td></tr>
{{end}}</tbody></table>
<p id="empty"{{if .Rows}} hidden{{end}}>No outage now or in the last day.</p>
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
      const r = await fetch('api/v1/incidents',{cache:'no-store'});
      if(!r.ok) throw new Error('HTTP '+r.status);
      const body = await r.json();
      document.getElementById('now').textContent = fmt(body.now)+' UTC';
      document.getElementById('updated').textContent = 'Updated '+new Date().toLocaleTimeString()+'; updates every 5 seconds.';
      const key = JSON.stringify(body.incidents.map(i => [i.id, i.end, i.signals, i.networks, i.severity, i.silenced, Math.floor(i.duration_s/60)]));
      if(key === last) return; // unchanged: keep the rows (and what the reader is pointing at)
      last = key;
      const tb = document.querySelector('#incidents tbody');
      tb.textContent='';
      for(const i of body.incidents){
        const tr=document.createElement('tr');const active=i.end===null;
        tr.className=active?'active':'ended';tr.dataset.id=i.id;
        cell(tr,'state',active?'ongoing':'ended','state');
        const a=document.createElement('a');a.href='incident/'+i.id;a.textContent=i.place;cell(tr,'place','').appendChild(a);
        cell(tr,'networks',(i.networks||[]).join(', '));cell(tr,'signals',(i.signals||[]).join(', '));
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
<header><a href="../">{{.Title}}</a><small>data time {{.Now.Format "2006-01-02 15:04 MST"}}</small></header>
<main>
{{with .Row}}<h1 id="place">{{.Place}}</h1>
<p class="{{if .Active}}active{{else}}ended{{end}}"><span class="state">{{if .Active}}ongoing{{else}}ended {{.EndS}} UTC{{end}}</span>
 · since {{.StartS}} UTC ({{.DurationS}}) · severity <span class="sev-{{.Severity}}">{{.Severity}}</span> · confidence {{.ConfidenceS}}{{if .Silenced}} · silenced{{end}}</p>
<p>Networks: {{if .Networks}}{{.NetworksS}}{{else}}—{{end}}<br>Signals: {{.SignalsS}}</p>{{end}}
<h2>Member alerts</h2>
<table id="alerts"><thead><tr><th>status</th><th>what</th><th>where</th><th>start – end (UTC)</th><th>change</th><th>summary</th></tr></thead><tbody>
{{range .Alerts}}<tr><td data-l="status" class="sev-{{if eq .Status "firing"}}critical{{end}}">{{.Status}}</td>
<td data-l="what">{{.Detector}}<br><span class="muted">{{.Signal}}</span></td><td data-l="where">{{.Name}}</td>
<td data-l="when">{{.StartS}}{{if .EndS}} – {{.EndS}}{{end}}</td><td data-l="change">{{.Change}}</td><td data-l="summary">{{.Summary}}</td></tr>
{{end}}</tbody></table>
<h2>Charts</h2>
{{range .Charts}}<figure aria-label="{{.Title}}">{{.SVG}}</figure>
{{else}}<p class="muted">No data recorded for these series.</p>{{end}}
</main></body></html>`))
