// The demo callback page: the commands that exchange the code are shown only while the code can
// still be exchanged. The page counts the seconds the server said are left; at zero it hides the
// commands and leads with the way to start again. Without script the page shows what the server
// knew when it answered (a reload says whether the code expired or was used).
const state = document.getElementById('demo-code-state');
const secondsLeft = Number(state?.dataset.expiresIn);
if (state && Number.isFinite(secondsLeft)) {
  const end = Date.now() + secondsLeft * 1000;
  const counter = document.getElementById('demo-countdown');
  const timer = setInterval(() => {
    const left = Math.max(0, Math.ceil((end - Date.now()) / 1000));
    counter.textContent = String(left);
    if (left > 0) return;
    clearInterval(timer);
    for (const id of ['demo-code-state', 'demo-live', 'demo-start-again-later']) document.getElementById(id).hidden = true;
    for (const id of ['demo-code-expired', 'demo-start-again-now']) document.getElementById(id).hidden = false;
  }, 1000);
}
