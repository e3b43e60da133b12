// Progressive enhancement: "Copy" buttons for a field's value or an element's text (the one-time
// secret, the client id); the page works without them.
for (const button of document.querySelectorAll('button[data-copy-target]')) {
  const target = document.getElementById(button.dataset.copyTarget);
  if (!target) continue;
  button.hidden = false;
  button.addEventListener('click', async () => {
    await navigator.clipboard.writeText('value' in target ? target.value : target.textContent.trim());
    button.textContent = 'Copied';
  });
}
