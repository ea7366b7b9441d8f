import { describe, expect, test } from 'vitest';
import { endpoints } from '../../src/contract/endpoints.js';
import { routes } from '../../src/contract/routes.js';

describe('the contract: routes and endpoints', () => {
  test('every route has its schemas in the endpoint table, and nothing else is there', () => {
    expect(Object.keys(endpoints).sort()).toEqual(Object.keys(routes).sort());
  });

  test('each endpoint carries its route unchanged', () => {
    for (const [name, route] of Object.entries(routes)) {
      const endpoint = endpoints[name as keyof typeof endpoints];
      expect({ name, method: endpoint.method, path: endpoint.path, status: endpoint.status }).toEqual({ name, method: route.method, path: route.path, status: route.status });
    }
  });
});
