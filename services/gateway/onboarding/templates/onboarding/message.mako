<%inherit file="layout.mako"/>
<h2>${page.heading}</h2>
<div class="alert ${page.tone}" id="message" role="status">${page.message}</div>
% if page.reference:
<p class="hint">Reference: <code id="reference">${page.reference}</code></p>
% endif
