## Every ${...} is HTML-escaped (TemplateLookup default_filters=["h"]). No script, anywhere.
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${page.title}</title>
<style nonce="${page.nonce}">
  :root { --primary: ${page.primary}; --accent: ${page.accent}; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
         color: #1F2328; background: #F4F5F7; }
  .backdrop { position: fixed; inset: 0; width: 100%; height: 100%; object-fit: cover;
              z-index: -1; opacity: .25; }
  header { background: var(--primary); color: #FFFFFF; padding: 20px 24px; display: flex;
           align-items: center; gap: 14px; }
  header img { height: 40px; max-width: 160px; object-fit: contain; background: #FFFFFF;
               border-radius: 6px; padding: 4px; }
  header h1 { font-size: 1.35rem; margin: 0; word-break: break-word; }
  main { max-width: 520px; margin: 28px auto; background: #FFFFFF; border-radius: 10px;
         padding: 24px 28px; box-shadow: 0 1px 4px rgba(0,0,0,.12);
         border-top: 4px solid var(--accent); }
  label { display: block; font-weight: 600; margin: 14px 0 4px; }
  input, select { width: 100%; padding: 9px 10px; font: inherit; border: 1px solid #C9CDD2;
                  border-radius: 6px; }
  .hint { color: #59636E; font-size: .85rem; }
  button { margin-top: 22px; width: 100%; padding: 11px; font: inherit; font-weight: 600;
           color: #FFFFFF; background: var(--primary); border: 0; border-radius: 6px; cursor: pointer; }
  .alert { padding: 12px 14px; border-radius: 6px; margin-bottom: 14px; }
  .alert.error { background: #FFEBE9; color: #82071E; border: 1px solid #FF8182; }
  .alert.ok { background: #DAFBE1; color: #116329; border: 1px solid #4AC26B; }
  footer { text-align: center; color: #59636E; font-size: .85rem; margin-bottom: 28px; }
  a { color: var(--accent); }
</style>
</head>
<body>
% if page.brand and page.brand.background_image_url and page.brand.background_image_url.startswith("https://"):
<img class="backdrop" src="${page.brand.background_image_url}" alt="">
% endif
<header>
% if page.brand and page.brand.logo_url:
  <img src="${page.brand.logo_url}" alt="${page.app_name} logo">
% endif
  <h1 id="app-name">${page.app_name}</h1>
</header>
<main>
${next.body()}
</main>
<footer>
% if page.brand and page.brand.support_email:
  Need help? <a href="mailto:${page.brand.support_email}">${page.brand.support_email}</a>
% else:
  Secure signup link &middot; single use
% endif
</footer>
</body>
</html>
