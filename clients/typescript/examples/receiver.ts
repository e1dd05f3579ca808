import { createServer } from "node:http";
import { WebhookRefused, type WebhookEvent, verifyWebhook } from "@sluice/sdk";

export const receiver = (secret: string, handle: (event: WebhookEvent) => void) =>
  createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      try {
        handle(verifyWebhook(Buffer.concat(chunks), req.headers, secret)); // dedupe on event.id
        res.writeHead(200).end("ok");
      } catch (err) {
        res.writeHead(err instanceof WebhookRefused ? 400 : 500).end();
      }
    });
  });
