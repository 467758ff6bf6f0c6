// NcSelect and NcTextArea render a field's helper text themselves and give it no role, and NcSelect passes
// no aria-invalid to its input: set here, so a server's field error is marked at its control and announced.
export function markFieldError(root: Element | null | undefined, controlId: string, error: boolean): void {
  const control = root?.querySelector(`[id="${controlId}"]`);
  const help = root?.querySelector(`[id="${controlId}-helper-text"]`);
  if (error) {
    control?.setAttribute('aria-invalid', 'true');
    help?.setAttribute('role', 'alert');
  } else {
    control?.removeAttribute('aria-invalid');
    help?.removeAttribute('role');
  }
}
