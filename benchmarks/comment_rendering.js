(async () => {
  const body = document.querySelector('.markdown-body');
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const edge = body.getBoundingClientRect().right - 16;
  const out = {}; const examples = {};
  const add = (name, text) => {
    out[name] = (out[name] || 0) + 1;
    (examples[name] = examples[name] || []).length < 5 && examples[name].push(text.slice(0, 160));
  };
  for (const name of %(names)s) out[name] = 0;
  for (const t of body.querySelectorAll('table')) {
    if (t.scrollWidth > t.clientWidth + 1) {
      add('wide_tables', [...t.querySelectorAll('th')].map(th => th.textContent).join(' | '));
    }
  }
  for (const el of body.querySelectorAll('*')) {
    if (el.closest('pre, table, svg') || el.matches('details, summary')) continue;
    if (el.getBoundingClientRect().right > edge + 1 && el.children.length === 0) {
      add('wide_other', el.tagName + ': ' + el.textContent);
    }
  }
  // A block's own text: nested blocks removed, code replaced by a mark.
  const own = (el) => {
    const copy = el.cloneNode(true);
    copy.querySelectorAll('ul, ol, table, details, pre, p').forEach(n => n.remove());
    copy.querySelectorAll('code').forEach(n => n.replaceWith('§'));
    copy.querySelectorAll('br').forEach(n => n.replaceWith('\n'));
    return copy.textContent;
  };
  const plural = /(^|[^\d.,+\-])1 (?!(?:was|has|is|its|this|plus|class|pass|less|process|bias)\b)[a-z]+s\b/;
  for (const el of body.querySelectorAll('p, li, td, th, summary, h3, sub')) {
    const text = own(el);
    if (text.includes('`')) add('backticks', text);
    if (/(^|\s):[a-z0-9_+\-]+:(\s|$)/.test(text)) add('shortcodes', text);
    if (/\(\s*\)/.test(text)) add('empty_parens', text);
    if (plural.test(text) || text.includes('(s)')) add('grammar', text);
    if (el.tagName === 'LI') {
      for (const line of text.split('\n')) {
        if (/reached by:.*\b(added|removed|changed|moved)\b/.test(line)) add('glued', line);
      }
    }
  }
  const status = body.querySelector('h3 + p');
  const skipped = [];
  if (status) {
    for (const strong of status.querySelectorAll('strong')) {
      const before = strong.previousSibling;
      if (before && before.textContent.trimEnd().endsWith('⏭️')) skipped.push(strong.textContent);
    }
  }
  for (const d of body.querySelectorAll('details')) {
    const top = d.parentElement.closest('details') || d;
    const title = top.querySelector('summary').textContent.replace(/^Details: /, '');
    if (skipped.includes(title)) add('skipped_folds', d.querySelector('summary').textContent);
  }
  // A generated-docs item: "table · backend · Column: before → after" (or "the generator
  // writes X, the doc has Y").
  for (const li of body.querySelectorAll('li')) {
    const fold = li.closest('details');
    const title = fold ? fold.querySelector('summary').textContent : '';
    if (!title.includes('Generated docs')) continue;
    const text = li.textContent.trim();
    const pair = text.match(
      /^[^:]* · [^:]+: (?:the generator writes (.*), the doc has (.*)|(.*) → (.*))$/s);
    if (pair) {
      const [a, b] = pair[1] !== undefined ? [pair[1], pair[2]] : [pair[3], pair[4]];
      if (a.trim() === b.trim()) add('same_cells', text);
    }
  }
  for (const t of body.querySelectorAll('table')) {
    const heads = [...t.querySelectorAll('th')].map(th => th.textContent.trim());
    for (const [a, b] of [['Before', 'After'], ['Expected', 'Actual']]) {
      const i = heads.indexOf(a), j = heads.indexOf(b);
      if (i < 0 || j < 0) continue;
      for (const row of t.querySelectorAll('tbody tr')) {
        const cells = row.querySelectorAll('td');
        if (cells[i] && cells[j] && cells[i].textContent.trim() === cells[j].textContent.trim()) {
          add('same_cells', cells[0].textContent + ' / ' + cells[1].textContent + ': ' + cells[i].textContent);
        }
      }
    }
  }
  const charts = [];
  if (window.mermaid) {
    mermaid.initialize({startOnLoad: false});
    let n = 0;
    for (const code of body.querySelectorAll('pre code.language-mermaid, pre[lang=mermaid] code')) {
      const {svg} = await mermaid.render('chart' + (n++), code.textContent);
      const holder = document.createElement('div');
      holder.innerHTML = svg; code.parentElement.replaceWith(holder);
      // Per axis: overlapping labels, and the first tick of a numeric (value) axis.
      let overlapping = 0, labels = 0, y_start = null;
      for (const axis of holder.querySelectorAll('.left-axis, .bottom-axis, .top-axis, .right-axis')) {
        const texts = [...axis.querySelectorAll('.label text, text')].filter(t => !t.closest('.title'));
        const unique = [...new Set(texts)];
        const boxes = unique.map(l => l.getBoundingClientRect());
        labels += unique.length;
        boxes.forEach((a, i) => {
          if (boxes.some((b, j) => j !== i && a.left < b.right - 0.5 && b.left < a.right - 0.5 &&
              a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5)) overlapping++;
        });
        const values = unique.map(l => l.textContent.trim());
        if (values.length && values.every(v => v !== '' && !isNaN(Number(v)))) {
          y_start = Math.min(...values.map(Number));
        }
      }
      charts.push({bars: holder.querySelectorAll('[class*=bar-plot] rect').length,
                   overlapping_labels: overlapping, labels, y_start,
                   width: Math.round(holder.getBoundingClientRect().width)});
    }
  }
  const pre = document.createElement('pre'); pre.id = 'prbot-figures';
  pre.textContent = JSON.stringify({figures: out, examples, charts, mermaid: !!window.mermaid});
  document.body.appendChild(pre);
})();
