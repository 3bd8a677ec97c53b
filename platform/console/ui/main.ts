/**
 * The console's entry: sign in with a key (checked by the server, kept in sessionStorage), then
 * pages by the URL's hash (#/, #/endpoints/<id>, #/volumes, #/builds) — never the key in a URL.
 */
import "./style.css";
import { forgetKey, SignedOut, signIn, storedKey } from "./api.ts";
import { h } from "./dom.ts";
import { endpointPage } from "./endpoint.ts";
import { buildsPage, overviewPage, volumesPage } from "./pages.ts";

const main = document.getElementById("main")!;
const nav = document.getElementById("nav")!;
let stopPage: (() => void) | undefined;

function signInForm(reason?: string): void {
  nav.hidden = true;
  const input = h("input", { id: "key", name: "key", type: "password", autocomplete: "off", required: true, "aria-describedby": "key-help" });
  const message = h("p", { id: "signin-error", class: "error", role: "alert" }, reason ?? "");
  const form = h(
    "form",
    { class: "panel signin", "aria-label": "Sign in" },
    h("h1", {}, "Sign in"),
    h("label", { for: "key" }, "API key"),
    input,
    h("p", { id: "key-help", class: "muted" }, "The platform's key (svc platform start prints where it is). Worker keys cannot sign in. Press Enter."),
    message,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    message.textContent = "";
    signIn(input.value.trim())
      .then(() => route())
      .catch((error: Error) => {
        message.textContent = error instanceof SignedOut ? `Refused: ${error.message}` : `Could not sign in: ${error.message}`;
      });
  });
  main.replaceChildren(form);
  input.focus();
}

async function route(): Promise<void> {
  stopPage?.();
  stopPage = undefined;
  if (!storedKey()) return signInForm();
  nav.hidden = false;
  const hash = location.hash.replace(/^#/, "") || "/";
  const endpoint = /^\/endpoints\/([^/]+)$/.exec(hash);
  try {
    if (endpoint) {
      const page = await endpointPage(decodeURIComponent(endpoint[1]!));
      stopPage = page.stop;
      main.replaceChildren(...page.nodes);
    } else if (hash === "/volumes") main.replaceChildren(...(await volumesPage()));
    else if (hash === "/builds") main.replaceChildren(...(await buildsPage()));
    else main.replaceChildren(...(await overviewPage()));
    document.title = `${main.querySelector("h1")?.textContent ?? "svc"} · svc console`;
  } catch (error) {
    if (error instanceof SignedOut) {
      forgetKey();
      return signInForm(error.message);
    }
    main.replaceChildren(h("p", { class: "error", role: "alert" }, (error as Error).message));
  }
}

document.getElementById("sign-out")!.addEventListener("click", () => {
  forgetKey();
  location.hash = "";
  void route();
});
window.addEventListener("hashchange", () => void route());
void route();
