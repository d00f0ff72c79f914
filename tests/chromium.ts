// Debian's Chromium for every browser the tests and benchmarks start (never a downloaded one):
// headless, and without the services that would reach the network or spin a second core.
import { chromium, type Browser } from "playwright-core";

export async function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
    ],
  });
}
