// What every ability's execute receives: the services of this process and the call (principal, signal, progress).
// Core's ability type is generic over its context so that core never imports the services above it.
import type { z } from 'zod';
import { defineAbility as defineCore, type Ability, type CallContext } from '../core/ability.js';
import type { Services } from '../domain/index.js';

export type AbilityContext = Services & CallContext;

export function defineAbility<I extends z.ZodObject, O extends z.ZodType, N extends string>(
  a: Ability<I, O, AbilityContext, N>,
): Ability<I, O, AbilityContext, N> {
  return defineCore(a);
}
