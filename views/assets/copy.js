// Progressive enhancement: a "Copy" button for the one-time secret (the page works without it).
for (const button of document.querySelectorAll('button[data-copy-target]')) {
  const input = document.getElementById(button.dataset.copyTarget);
  button.hidden = false;
  button.addEventListener('click', async () => {
    await navigator.clipboard.writeText(input.value);
    button.textContent = 'Copied';
  });
}
