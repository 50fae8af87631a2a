"""The two pages ``mitigate label`` serves, self-contained (no external asset, scripts and styles allowed by a
per-response nonce): the labelling page and the agreement view. Both read the per-session token from their
own address and send it with every request; they insert every text as text (``textContent``), never as
markup."""

from __future__ import annotations

import html

CSP = (
    "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'; "
    "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""The Content-Security-Policy of every page: nothing but this server, and only the page's own scripts."""

_STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1b1b1b;background:#fafafa}
header{display:flex;gap:1.2em;align-items:center;padding:.6em 1em;background:#24364b;color:#fff;
flex-wrap:wrap}
header input{width:9em}
main{padding:1em;max-width:1200px;margin:auto}
.text{white-space:pre-wrap;background:#fff;border:1px solid #ccd;border-radius:4px;padding:.6em;
max-height:22em;overflow:auto}
.outputs{display:flex;gap:1em}.outputs>div{flex:1;min-width:0}
h3{margin:.8em 0 .3em;font-size:1em;color:#24364b}
.crit{margin:.8em 0;padding:.5em;border-radius:4px}.crit.active{background:#e4eefb}
button{font:inherit;margin:.15em;padding:.35em .8em;border:1px solid #889;border-radius:4px;background:#fff;
cursor:pointer}
button.on{background:#24364b;color:#fff}
kbd{font-size:.8em;border:1px solid #aab;border-radius:3px;padding:0 .3em;margin-right:.3em;color:#556}
button.on kbd{color:#dde;border-color:#dde}
#msg{min-height:1.4em;color:#a01010;font-weight:600}
.keys{color:#556;font-size:.9em}
table{border-collapse:collapse;margin:.5em 0 1em}
td,th{border:1px solid #ccd;padding:.25em .6em;text-align:right}
th{background:#eef}td:first-child,th:first-child{text-align:left}
.muted{color:#667}
"""

_COMMON_JS = """
const TOKEN=new URLSearchParams(location.search).get('t')||'';
async function api(path,body){
  const r=await fetch(path,{method:body?'POST':'GET',headers:{'X-Mitigate-Token':TOKEN,
    'Content-Type':'application/json'},body:body?JSON.stringify(body):undefined,cache:'no-store'});
  const data=await r.json().catch(()=>({error:'the server sent no JSON ('+r.status+')'}));
  if(!r.ok)throw new Error(data.error||('HTTP '+r.status));
  return data;
}
function el(tag,text,cls){const e=document.createElement(tag);if(text!==undefined&&text!==null)
  e.textContent=String(text);if(cls)e.className=cls;return e}
"""

_LABEL_JS = """
let item=null,active=0,history=[],busy=false;
const $=id=>document.getElementById(id);
function keyOf(i){return i===9?'0':String(i+1)}
function pairKey(c){return c==='tie'?'t':c.toLowerCase()}
function show(data,keep){
  item=data;
  if(!keep){active=0;while(active<item.criteria.length-1&&item.labels[item.criteria[active].name]!=null)active++}
  const p=item.progress;
  $('progress').textContent=p.done+' of '+p.total+' labelled, '+p.left+' left';
  $('groups').textContent=Object.entries(p.groups).map(([g,c])=>g+': '+c.left+' left').join(' · ');
  $('position').textContent='item '+(item.position+1)+' of '+p.total;
  const m=$('main');m.replaceChildren();
  if(item.task){m.append(el('h3','Task'),el('div',item.task,'text'))}
  for(const [k,v] of Object.entries(item.inputs)){m.append(el('h3',k),el('div',v,'text'))}
  const outs=el('div',null,'outputs');
  item.outputs.forEach((o,i)=>{const d=el('div');d.append(el('h3',item.outputs.length>1?
    'Output '+'AB'[i]:'Output'),el('div',o,'text'));outs.append(d)});
  m.append(outs);
  if(item.shown){m.append(el('h3','Shown (not blind)'),el('div',JSON.stringify(item.shown),'text muted'))}
  item.criteria.forEach((c,ci)=>{
    const box=el('div',null,'crit'+(ci===active?' active':''));box.append(el('h3',c.name+' ('+c.scale+')'));
    if(c.choices.length){c.choices.forEach((v,i)=>{const b=el('button');b.append(el('kbd',
      typeof v==='string'?pairKey(v):keyOf(i)),document.createTextNode(String(v)));
      if(item.labels[c.name]===v)b.className='on';b.onclick=()=>give(ci,v);box.append(b)})}
    else{const inp=el('input');inp.type='number';inp.id='num'+ci;inp.onkeydown=e=>{if(e.key==='Enter'){
      e.stopPropagation();give(ci,Number(inp.value))}};box.append(inp)}
    m.append(box)});
  if(p.left===0){const a=el('a','All labelled: open the agreement view');a.href='/agreement?t='+
    encodeURIComponent(TOKEN);m.append(el('h3','Done'),a)}
  document.body.dataset.position=String(item.position);document.body.dataset.left=String(p.left);
  document.body.dataset.shownAt=String(performance.now());
}
async function load(pos){
  try{show(await api('/api/item'+(pos==null?'':'?position='+pos)));$('msg').textContent=''}
  catch(e){$('msg').textContent=e.message}
}
async function send(labels,expect,after){
  busy=true;
  try{const r=await api('/api/label',{position:item.position,labels:labels,expect:expect,
      labeller:$('labeller').value||null});$('msg').textContent='';after(r)}
  catch(e){$('msg').textContent=e.message}
  finally{busy=false}
}
function give(ci,value){
  if(busy)return;const c=item.criteria[ci];const before={};before[c.name]=item.labels[c.name]??null;
  const labels={};labels[c.name]=value;
  send(labels,before,r=>{history.push({position:item.position,labels:before});
    item.labels=r.labels;
    const next=item.criteria.findIndex(x=>item.labels[x.name]==null);
    if(next<0){load(r.next)}else{item.progress=r.progress;active=next;show(item,true)}})
}
function undo(){
  if(busy||!history.length)return;const last=history.pop();
  api('/api/item?position='+last.position).then(cur=>{item=cur;
    send(last.labels,cur.labels,()=>load(last.position))}).catch(e=>{$('msg').textContent=e.message})
}
document.addEventListener('keydown',e=>{
  if(!item||e.target.tagName==='INPUT'||e.ctrlKey&&e.key!=='z'||e.metaKey||e.altKey)return;
  const c=item.criteria[active];const k=e.key.toLowerCase();
  if(k==='z'&&e.ctrlKey||k==='u'){undo();e.preventDefault();return}
  if(k==='arrowleft'||k==='backspace'){if(item.position>0)load(item.position-1);e.preventDefault();return}
  if(k==='arrowright'||k==='s'){if(item.position+1<item.progress.total)load(item.position+1);
    e.preventDefault();return}
  if(k==='tab'){active=(active+1)%item.criteria.length;show(item,true);e.preventDefault();return}
  if(!c||!c.choices.length)return;
  const i=c.choices.findIndex((v,j)=>typeof v==='string'?pairKey(v)===k:keyOf(j)===k);
  if(i>=0){give(active,c.choices[i]);e.preventDefault()}
});
$('labeller').value=localStorage.getItem('mitigate-labeller')||document.body.dataset.labeller||'';
$('labeller').onchange=()=>localStorage.setItem('mitigate-labeller',$('labeller').value);
load(null);
"""

_AGREEMENT_JS = """
function interval(s){return !s||s.value==null?'—':s.value.toFixed(2)+(s.low==null?'':' ['+s.low.toFixed(2)+
  ', '+s.high.toFixed(2)+']')}
function table(head,rows){const t=el('table'),h=el('tr');head.forEach(x=>h.append(el('th',x)));t.append(h);
  rows.forEach(r=>{const tr=el('tr');r.forEach(x=>tr.append(el('td',x)));t.append(tr)});return t}
function num(x){return x==null?'—':x.toFixed(2)}
async function draw(){
  let s;try{s=await api('/api/summary')}catch(e){document.getElementById('msg').textContent=e.message;return}
  const m=document.getElementById('main');m.replaceChildren();
  m.append(el('p',s.progress.done+' of '+s.progress.total+' items labelled'));
  for(const [crit,c] of Object.entries(s.criteria)){
    m.append(el('h2',crit+': agreement of '+c.judge+' with the labels'));
    const k=Object.values(c.agreement).some(a=>'kappa' in a)?'kappa':'kappa_quadratic';
    m.append(table(['system','n','Spearman ρ [95%]',k==='kappa'?'Cohen κ [95%]':'κ, quadratic [95%]'],
      Object.entries(c.agreement).map(([g,a])=>[g,a.n,interval(a.spearman),a[k]?interval(a[k]):'—'])));
    const all=c.agreement.all;
    if(all.confusion){m.append(el('h3','Confusion, all systems (rows: label, columns: judge)'));
      m.append(table(['label \\\\ judge',...c.categories.map(String)],
        all.confusion.map((r,i)=>[String(c.categories[i]),...r.map(String)])))}
    else if(all.note){m.append(el('p',all.note,'muted'))}
    m.append(el('h2',crit+': corrected estimate per system (PPI++)'));
    if(c.estimate){m.append(table(['system','labelled','estimate [95%]','labels alone','judge alone',
      ...(c.plan?['more labels needed']:[])],c.estimate.map(g=>[g.group,g.n_labelled+' of '+g.n,
      num(g.estimate)+' ['+num(g.low)+', '+num(g.high)+']',g.human?num(g.human.estimate):'—',
      g.judge?num(g.judge.estimate):'—',...(c.plan?[c.plan[g.group]&&c.plan[g.group].more!=null?
      String(c.plan[g.group].more):'—']:[])])))}
    if(c.estimate_note){m.append(el('p',c.estimate_note,'muted'))}
  }
  document.body.dataset.ready='1';
}
draw();setInterval(draw,5000);
"""


def label_page(nonce: str, labeller: str) -> str:
    """The labelling page (its script fetches the items)."""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>mitigate label</title>'
        f'<style nonce="{nonce}">{_STYLE}</style></head>'
        f'<body data-labeller="{html.escape(labeller, quote=True)}">'
        '<header><strong>mitigate label</strong><span id="position"></span><span id="progress"></span>'
        '<span id="groups"></span><label>labeller <input id="labeller"></label></header>'
        '<main><div id="msg" role="alert"></div><p class="keys"><kbd>1</kbd>…<kbd>9</kbd><kbd>0</kbd> score '
        "· <kbd>a</kbd><kbd>b</kbd><kbd>t</kbd> A, B, tie · <kbd>s</kbd>/<kbd>→</kbd> skip · "
        "<kbd>←</kbd> back · <kbd>u</kbd> undo · <kbd>Tab</kbd> next criterion</p>"
        '<div id="main"></div></main>'
        f'<script nonce="{nonce}">{_COMMON_JS}{_LABEL_JS}</script></body></html>'
    )


def agreement_page(nonce: str) -> str:
    """The agreement view: the judge against the labels, and the corrected estimates (refreshed every 5 s)."""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>mitigate label: agreement</title>'
        f'<style nonce="{nonce}">{_STYLE}</style></head><body><header><strong>mitigate label: agreement'
        '</strong></header><main><div id="msg" role="alert"></div><div id="main"></div></main>'
        f'<script nonce="{nonce}">{_COMMON_JS}{_AGREEMENT_JS}</script></body></html>'
    )
