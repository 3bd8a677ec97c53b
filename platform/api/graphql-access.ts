/**
 * Each field of a GraphQL operation checked against its rule (../keys/rules.ts GRAPHQL_RULES) before
 * anything runs: the role, and the scope of the app the field's argument names (with the variables
 * coerced as execution will). A field with no rule is refused; introspection is open to any key.
 */
import {
  getArgumentValues,
  getVariableValues,
  Kind,
  type DocumentNode,
  type FieldNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from "graphql";
import { errors, type SvcError } from "../../core/errors.ts";
import { PLATFORM_ADMIN, placeOf, refusal, type Identity } from "../keys/access.ts";
import { GRAPHQL_RULES } from "../keys/rules.ts";
import type { Store } from "../store/index.ts";

/** The operation's top-level fields, through fragments. */
function rootFields(document: DocumentNode, set: SelectionSetNode, out: FieldNode[] = []): FieldNode[] {
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) out.push(selection);
    else if (selection.kind === Kind.INLINE_FRAGMENT) rootFields(document, selection.selectionSet, out);
    else {
      const fragment = document.definitions.find((d) => d.kind === Kind.FRAGMENT_DEFINITION && d.name.value === selection.name.value);
      if (fragment?.kind === Kind.FRAGMENT_DEFINITION) rootFields(document, fragment.selectionSet, out);
    }
  }
  return out;
}

/** undefined when `who` may run the operation (or it is one execution refuses anyway), else 403 KEY_FORBIDDEN. */
export function operationRefusal(
  schema: GraphQLSchema,
  store: Store,
  who: Identity,
  document: DocumentNode,
  operationName: string | undefined,
  variables: Record<string, unknown> | undefined,
): SvcError | undefined {
  if (who === PLATFORM_ADMIN) return undefined;
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const operation = operationName ? operations.find((o) => o.name?.value === operationName) : operations.length === 1 ? operations[0] : undefined;
  if (!operation) return undefined;
  const root: GraphQLObjectType | null | undefined = operation.operation === "mutation" ? schema.getMutationType() : schema.getQueryType();
  if (operation.operation === "subscription" || !root) return errors.KEY_FORBIDDEN(`"${who.name}"`, "subscribe", "a schema with subscriptions");
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {});
  if (coerced.errors) return undefined; // execution answers them, running nothing
  for (const node of rootFields(document, operation.selectionSet)) {
    const name = node.name.value;
    if (name.startsWith("__")) continue;
    const field = `${root.name}.${name}`;
    const rule = GRAPHQL_RULES[field];
    if (!rule) return errors.KEY_FORBIDDEN(`"${who.name}"`, `call ${field}`, "a rule for it in platform/keys/rules.ts (there is none)");
    const definition = root.getFields()[name];
    const args = definition ? getArgumentValues(definition, node, coerced.coerced) : {};
    const error = refusal(who, rule, () => placeOf(store, rule.on, rule.arg ? args[rule.arg] : undefined), `call ${field}`);
    if (error) return error;
  }
  return undefined;
}
