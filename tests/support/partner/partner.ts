// A partner's script, type-checked (tsc --strict, no skipLibCheck) and run from the installed
// npm tarball by tests/integration/test_sdk_packaging.py.
import { Sluice, newKey, ok } from "@sluice/sdk";

const sluice = new Sluice({ apiKey: process.env["SLUICE_SANDBOX_KEY"] ?? "", baseUrl: process.env["SLUICE_API_URL"] ?? "" });
const customer = (
  await ok(
    sluice.api.POST("/v1/customers", {
      body: { account_type: "individual", email: "ada@example.com", country_code: "US", service_user_id: newKey(), full_name: "Ada" },
    }),
  )
).data;
const name: string = customer.customer_id;
console.log("customer", name.startsWith("cus_") ? "True" : "False");
