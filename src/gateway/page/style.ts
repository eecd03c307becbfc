/**
 * The player page's style sheet, inline (the page loads nothing else). Phone first: one column that reads at
 * 360 px, wider only up to a comfortable line; buttons of at least 44 px (a thumb's target); a focus ring on
 * whatever the keyboard reaches; the system's colours, light or dark.
 */
export const PAGE_STYLE = `
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #ffffff; --muted: #57606a; --line: #d0d7de;
  --accent: #0969da; --ok: #1a7f37; --bad: #cf222e; --code: #f6f8fa; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1; --line: #3d444d; --accent: #4493f8; --ok: #3fb950;
    --bad: #f85149; --code: #161b22; }
}
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
  background: var(--bg); }
main { max-width: 40rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.25rem; margin: 0 0 0.75rem; overflow-wrap: anywhere; }
h2 { font-size: 1.125rem; margin: 0 0 0.25rem; }
p { margin: 0.25rem 0; }
.muted { color: var(--muted); }
#notice { border: 2px solid var(--bad); border-radius: 6px; padding: 0.5rem 0.75rem; margin: 0 0 0.75rem; }
#steps { padding-left: 1.5rem; margin: 0.5rem 0; }
#steps li.done { color: var(--ok); }
#steps li.waiting { color: var(--muted); }
#connect { margin: 0.75rem 0; }
.command { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; }
code { font: 0.95rem/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--code);
  border: 1px solid var(--line); border-radius: 6px; padding: 0.5rem; overflow-wrap: anywhere; flex: 1 1 14rem; }
#actions { display: grid; grid-template-columns: 1fr; gap: 0.5rem; margin-top: 1rem; }
.action { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; }
.action span { color: var(--muted); font-size: 0.875rem; flex: 1 1 12rem; }
button { font: inherit; min-height: 44px; min-width: 6.5rem; padding: 0.5rem 1rem; border-radius: 6px;
  border: 1px solid var(--accent); background: var(--accent); color: #ffffff; cursor: pointer; }
button.secondary { background: transparent; color: var(--accent); }
button:disabled { border-color: var(--line); background: transparent; color: var(--muted); cursor: not-allowed; }
button:focus-visible, a:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
[hidden] { display: none !important; }
.visually-hidden { position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden;
  clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
`
