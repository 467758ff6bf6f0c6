// An argument refused before any request is made; the model sees the message.
export class InvalidArgumentError extends Error {
  override name = 'InvalidArgumentError';
}
