// Count-aware wording, the one helper for every message (server and CLI): never `task(s)`.
/** `1 task`, `2 tasks`, `0 tasks`: a count with its noun in the right number. */
export const plural = (count: number, singular: string, pluralForm = `${singular}s`): string => `${count} ${count === 1 ? singular : pluralForm}`;
