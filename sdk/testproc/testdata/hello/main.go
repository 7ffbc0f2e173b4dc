// Command hello prints hello: the binary TestBuild builds.
package main

import "fmt"

func main() { fmt.Println("hello") }
