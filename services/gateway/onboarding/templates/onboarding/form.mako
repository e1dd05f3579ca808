<%inherit file="layout.mako"/>
<h2>Create your account</h2>
% if page.error:
<div class="alert error" id="error" role="alert">${page.error}</div>
% endif
<form method="post" action="${page.action}" autocomplete="on">
% if page.account_type:
  <p class="hint">Account type: <strong>${page.account_type}</strong></p>
% else:
  <label for="account_type">Account type</label>
  <select id="account_type" name="account_type">
    <option value="individual" ${'selected' if page.values.get("account_type") != "business" else ''}>Individual</option>
    <option value="business" ${'selected' if page.values.get("account_type") == "business" else ''}>Business</option>
  </select>
% endif
% if page.account_type != "business":
  <label for="full_name">Full name</label>
  <input id="full_name" name="full_name" maxlength="200" value="${page.values.get('full_name', '')}">
% endif
% if page.account_type != "individual":
  <label for="company_name">Company name</label>
  <input id="company_name" name="company_name" maxlength="200" value="${page.values.get('company_name', '')}">
  <label for="registration_number">Registration number <span class="hint">(optional)</span></label>
  <input id="registration_number" name="registration_number" maxlength="200" value="${page.values.get('registration_number', '')}">
% endif
  <label for="email">Email</label>
  <input id="email" name="email" type="email" required maxlength="254" value="${page.values.get('email', '')}">
  <label for="country_code">Country <span class="hint">(two letters, e.g. US)</span></label>
  <input id="country_code" name="country_code" required minlength="2" maxlength="2" pattern="[A-Za-z]{2}" value="${page.values.get('country_code', '')}">
  <label for="phone_e164">Phone <span class="hint">(optional, e.g. +14155550100)</span></label>
  <input id="phone_e164" name="phone_e164" type="tel" maxlength="16" value="${page.values.get('phone_e164', '')}">
  <button type="submit" id="submit">Create account</button>
</form>
